#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import Foundation
import StoreMigrations

/// A query of the store's own tables run through SQLite's C API on a connection of the store:
/// reading records is most of what planning a launch does with the database, and a ``Row`` per
/// record (its array of values, the statement's column names) cost more than SQLite's own work.
/// Values convert as ``Row``'s subscripts convert them; a value that does not convert is read
/// into a ``Row`` after all, which throws the error ``Row`` throws.
final class RecordQuery {
    private let database: Database
    private let statement: OpaquePointer
    private let sql: String

    private init(database: Database, statement: OpaquePointer, sql: String) {
        self.database = database
        self.statement = statement
        self.sql = sql
    }

    /// `sql` compiled, or SQLite's status when it refuses it (a missing table or column, say).
    private static func compile(_ sql: String, in database: Database) -> Result<RecordQuery, SQLiteError> {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v2(database.handle, sql, -1, &statement, nil)
        guard status == SQLITE_OK, let statement else {
            sqlite3_finalize(statement)
            return .failure(database.error(status, sql: sql))
        }
        return .success(RecordQuery(database: database, statement: statement, sql: sql))
    }

    /// `sql` compiled, or `nil` when SQLite refuses it.
    static func compiled(_ sql: String, in database: Database) -> RecordQuery? {
        try? compile(sql, in: database).get()
    }

    /// `sql` compiled, or the error ``Database`` reports for it.
    static func compiling(_ sql: String, in database: Database) throws -> RecordQuery {
        try compile(sql, in: database).get()
    }

    deinit {
        sqlite3_finalize(statement)
    }

    /// The next row, or `nil` after the last, the statement then reset for its next run. A loop
    /// over the rows rather than a closure called with each: a closure's captured variables are
    /// accessed through exclusivity checks, a call each, on every row.
    func nextRow() throws -> Cursor? {
        let status = sqlite3_step(statement)
        switch status {
        case SQLITE_ROW:
            return Cursor(query: self)
        case SQLITE_DONE:
            sqlite3_reset(statement)
            return nil
        default:
            let error = database.error(status, sql: sql)
            sqlite3_reset(statement)
            throw error
        }
    }

    /// The current row of the query.
    struct Cursor {
        let query: RecordQuery

        /// The value in `column` (from 0), as ``Statement`` reads it.
        func value(_ column: Int32) -> DatabaseValue {
            Statement.value(at: column, of: query.statement)
        }

        /// The value in `column` converted to `T`, or the error ``Row`` throws when it does not convert.
        subscript<T: DatabaseValueConvertible>(_ column: Int32) -> T {
            get throws {
                if let converted = T.fromDatabaseValue(value(column)) { return converted }
                return try row()[Int(column)]
            }
        }

        /// The integer in `column`, or `nil` when it holds another type or `NULL`.
        func integer(_ column: Int32) -> Int64? {
            let statement = query.statement
            return sqlite3_column_type(statement, column) == SQLITE_INTEGER ? sqlite3_column_int64(statement, column) : nil
        }

        /// The UTF-8 bytes of the text in `column`, valid until the cursor moves, or `nil` when the
        /// column holds another type or `NULL`: read in place, where a `String` would copy them.
        func text(_ column: Int32) -> UnsafeBufferPointer<UInt8>? {
            let statement = query.statement
            guard sqlite3_column_type(statement, column) == SQLITE_TEXT else { return nil }
            // Text first, then its length: the order in which SQLite's documentation has them read.
            let text = sqlite3_column_text(statement, column)
            return UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(statement, column)))
        }

        /// Whether `column` holds the text `string`, compared byte for byte in place.
        func text(_ column: Int32, equals string: String) -> Bool {
            guard let text = text(column) else { return false }
            var string = string
            return string.withUTF8 { bytes in
                bytes.count == text.count && (text.isEmpty || memcmp(bytes.baseAddress!, text.baseAddress!, text.count) == 0)
            }
        }

        /// The whole row, as ``Statement`` would return it.
        private func row() -> Row {
            let statement = query.statement
            let count = sqlite3_column_count(statement)
            let names = (0..<count).map { String(cString: sqlite3_column_name(statement, $0)) }
            return Row(values: (0..<count).map(value), layout: Row.Layout(names: names, sql: query.sql, path: query.database.path))
        }

        /// Binds the value in `column`, whatever its type, to the only parameter of `other`.
        fileprivate func bind(_ column: Int32, to other: RecordQuery) {
            sqlite3_bind_value(other.statement, 1, sqlite3_column_value(query.statement, column))
        }
    }
}

/// The Unix times of history rows' `applied_at`, as `(julianday(applied_at) - 2440587.5) * 86400.0`
/// gives them.
///
/// SQLite's `julianday()` cost a launch as much as the rest of SQLite's work on the history rows:
/// it parses any of the many forms SQLite knows. The store writes one form, `YYYY-MM-DDTHH:MM:SS.SSSZ`, so
/// that form is read here, with SQLite's arithmetic, to the same `Double`. Any other value
/// (written by hand, another tool, an impossible date) is still given to `julianday()`.
struct AppliedAtReader {
    private let database: Database
    /// Compiled when a first value needs it.
    private var julianDayQuery: RecordQuery?

    init(database: Database) {
        self.database = database
    }

    /// The Unix time of the value in `column` of `row`, or `nil` where `julianday()` gives `NULL`.
    mutating func unixTime(ofColumn column: Int32, in row: RecordQuery.Cursor) throws -> Double? {
        if let text = row.text(column), let time = Self.unixTime(ofStoreTimestamp: text) { return time }
        let query = try julianDayQuery ?? RecordQuery.compiling("SELECT (julianday(?) - 2440587.5) * 86400.0", in: database)
        julianDayQuery = query
        row.bind(column, to: query)
        var time: Double?
        while let result = try query.nextRow() { time = try result[0] }
        return time
    }

    /// The Unix time of `text` when it is a date the store writes (`YYYY-MM-DDTHH:MM:SS.SSSZ`,
    /// that day existing in that month), computed as SQLite computes it: the Julian day in whole
    /// milliseconds (`computeJD` in SQLite's `date.c`), then `julianday()`'s division and the
    /// query's subtraction and multiplication, in that order, so that rounding is the same.
    /// `nil` for any other text.
    static func unixTime(ofStoreTimestamp text: UnsafeBufferPointer<UInt8>) -> Double? {
        guard text.count == 24, let bytes = text.baseAddress,
              bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T"),
              bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"), bytes[19] == UInt8(ascii: "."),
              bytes[23] == UInt8(ascii: "Z")
        else { return nil }
        // Above 9 when a byte read as a digit is not one.
        var largestDigit = 0 as UInt8
        func number(at start: Int, digits count: Int) -> Int {
            var value = 0
            for index in start..<(start + count) {
                let digit = bytes[index] &- UInt8(ascii: "0")
                largestDigit = max(largestDigit, digit)
                value = value * 10 + Int(digit)
            }
            return value
        }
        let year = number(at: 0, digits: 4), month = number(at: 5, digits: 2), day = number(at: 8, digits: 2)
        let hour = number(at: 11, digits: 2), minute = number(at: 14, digits: 2), second = number(at: 17, digits: 2)
        let millisecond = number(at: 20, digits: 3)
        guard largestDigit < 10, (1...12).contains(month), day >= 1, day <= daysIn(month: month, of: year),
              hour < 24, minute < 60, second < 60
        else { return nil }
        let (y, m) = month <= 2 ? (year - 1, month + 12) : (year, month)
        let a = y / 100
        let b = 2 - a + a / 4
        let days = 36525 * (y + 4716) / 100 + 306001 * (m + 1) / 10000 + day + b
        // (days - 1524.5) days, in milliseconds, is exact in Int64 as it is in SQLite's double.
        let julianDay = Int64(days) * 86_400_000 - 131_716_800_000
            + Int64(hour * 3_600_000 + minute * 60_000 + second * 1_000 + millisecond)
        return (Double(julianDay) / 86_400_000.0 - 2440587.5) * 86400.0
    }

    private static func daysIn(month: Int, of year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}
