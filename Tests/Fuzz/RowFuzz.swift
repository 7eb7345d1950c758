#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import Foundation

/// `Row`'s typed reads over values of every storage class: the input is decoded into a few
/// `DatabaseValue`s, each bound and stored in columns of every affinity (where SQLite converts
/// it) and cast to every storage class, then every column of every row is read as every
/// `DatabaseValueConvertible` type, by index, by name and as an optional. Each read must give
/// the value a reference conversion (written apart from the library's) expects, or, when there
/// is none, a `SQLiteError` `SQLITE_MISMATCH` naming the column: never a trap.
enum RowFuzz {
    // One in-memory database and its statements for the whole run: opening one per input would
    // cost far more than the reads under test. libFuzzer calls the target from one thread.
    nonisolated(unsafe) static let fixture: (database: Database, clear: Statement, insert: Statement, select: Statement) = {
        let database = try! Database(path: ":memory:", busyTimeout: 0)
        try! database.execute("CREATE TABLE value(i INTEGER, r REAL, t TEXT, n NUMERIC, b BLOB)")
        return try! (
            database,
            database.prepare("DELETE FROM value"),
            database.prepare("INSERT INTO value VALUES (?1, ?1, ?1, ?1, ?1)"),
            database.prepare("""
                SELECT i, r, t, n, b, CAST(b AS INTEGER) AS ci, CAST(b AS REAL) AS cr, CAST(b AS TEXT) AS ct,
                    CAST(b AS BLOB) AS cb, CAST(b AS NUMERIC) AS cn
                FROM value ORDER BY rowid
                """))
    }()

    static func run(_ input: UnsafeRawBufferPointer) {
        let values = decode(input)
        values.forEach(checkLiteral)
        do {
            try fixture.clear.execute()
            for value in values { try fixture.insert.execute(arguments: [value]) }
            let rows = try fixture.select.rows()
            require(rows.count == values.count, "\(values.count) values stored, \(rows.count) rows read")
            for (position, (row, value)) in zip(rows, values).enumerated() {
                // The column without affinity keeps what was bound; SQLite stores NaN as NULL.
                let kept: DatabaseValue = if case .real(let real) = value, real.isNaN { .null } else { value }
                require(try row["b"] as DatabaseValue == kept, "\(value) stored without affinity reads back as \(row)")
                check(row, position: position)
            }
        } catch {
            fatalError("SQLite refused a value: \(error)")
        }
    }

    /// Checks that `value` written as an SQL literal, as the schema helpers write a `DEFAULT`,
    /// reads back as itself: `NULL` for a number without a literal (infinities), and a typed
    /// error for text holding a NUL, where SQLite stops reading the statement.
    static func checkLiteral(of value: DatabaseValue) {
        let literal = value.sqlLiteral
        do {
            let read = try fixture.database.row("SELECT " + literal)?.values.first
            let expected: DatabaseValue = if case .real(let real) = value, !real.isFinite { .null } else { value }
            // SQLite (3.40 here) reads some decimal texts, extreme exponents mostly, one unit in
            // the last place off, whatever the number of digits: no literal does better.
            let close = if case .real(let x)? = read, case .real(let y) = expected { abs(x - y) <= y.ulp } else { false }
            require(read == expected || close, "\(value) written as \(literal) reads back as \(String(describing: read))")
        } catch is SQLiteError where literal.utf8.contains(0) {
            // The NUL leaves the literal unclosed: SQLite refuses the statement, as it should.
        } catch {
            fatalError("\(value) written as \(literal) fails to read: \(error)")
        }
    }

    /// At most four values from the input's bytes, each a tag byte and what follows it: the tag
    /// modulo 5 chooses the storage class, the tag divided by 8 a length or a form.
    static func decode(_ input: UnsafeRawBufferPointer) -> [DatabaseValue] {
        var bytes = input[...]
        func take(_ count: Int) -> [UInt8] {
            let taken = Array(bytes.prefix(count))
            bytes = bytes.dropFirst(count)
            return taken
        }
        func integer(byteCount: Int) -> Int64 {
            // Little-endian, sign-extended from its last byte, so that short inputs give small
            // numbers of either sign.
            let taken = take(byteCount)
            guard let last = taken.last else { return 0 }
            var value: Int64 = last >= 0x80 ? -1 : 0
            for byte in taken.reversed() { value = value << 8 | Int64(byte) }
            return value
        }
        var values: [DatabaseValue] = []
        while let tag = bytes.first, values.count < 4 {
            bytes = bytes.dropFirst()
            let parameter = Int(tag >> 3)
            switch tag % 5 {
            case 0:
                values.append(.null)
            case 1:
                values.append(.integer(integer(byteCount: parameter % 8 + 1)))
            case 2:
                // Half are any bit pattern (NaN, infinities, subnormals), half a small number
                // times a power of two: integral, fractional or past 64 bits.
                if parameter % 2 == 0 {
                    values.append(.real(Double(bitPattern: UInt64(bitPattern: integer(byteCount: 8)))))
                } else {
                    values.append(.real(Double(integer(byteCount: 2)) * pow(2, Double(integer(byteCount: 1)))))
                }
            case 3:
                values.append(.text(String(decoding: take(parameter), as: UTF8.self)))
            default:
                values.append(.blob(Data(take(parameter))))
            }
        }
        return values
    }

    /// Checks `row`, the one at `position` in the result.
    static func check(_ row: Row, position: Int) {
        require(row == row && row.hashValue == row.hashValue && !row.description.isEmpty, "row \(row) is not equal to itself")
        for (index, value) in row.values.enumerated() {
            // Every conversion by index; one of them, another in each column and shifted from row
            // to row, also by name and as an optional: the ten columns of a row cover all seven,
            // at less than half the reads (most reads build an error, which makes them slow).
            let thorough = (index + position) % 7
            check(row, index, value, Int64.self, expected: expectedInt64(value), thorough: thorough == 0)
            check(row, index, value, Int.self, expected: expectedInt64(value).flatMap { Int(exactly: $0) }, thorough: thorough == 1)
            check(row, index, value, Double.self, expected: expectedDouble(value), thorough: thorough == 2)
            check(row, index, value, Bool.self, expected: expectedDouble(value).map { $0 != 0 }, thorough: thorough == 3)
            check(row, index, value, String.self, expected: expectedString(value), thorough: thorough == 4)
            check(row, index, value, Data.self, expected: expectedData(value), thorough: thorough == 5)
            check(row, index, value, DatabaseValue.self, expected: value, thorough: thorough == 6)
        }
        for (index, name) in row.columnNames.enumerated() {
            require((try? row[name.uppercased()] as DatabaseValue) == row.values[index], "column \(name) is not found in capitals")
        }
        for index in [-1, row.values.count, Int.min, Int.max] {
            expectError(SQLITE_RANGE, "column index \(index)") { try row[index] as DatabaseValue }
        }
        expectError(SQLITE_ERROR, "a column that does not exist") { try row["no such column"] as DatabaseValue }
    }

    /// Reads column `index` of `row` as `T` by index, and `thorough`ly every way there is, and
    /// compares with `expected`.
    static func check<T: DatabaseValueConvertible & Equatable>(
        _ row: Row, _ index: Int, _ value: DatabaseValue, _ type: T.Type, expected: T?, thorough: Bool
    ) {
        compare(row, index, value, "by index", expected) { try row[index] as T }
        guard thorough else { return }
        compare(row, index, value, "by name", expected) { try row[row.columnNames[index]] as T }
        if value == .null {
            let optional = try? row[index] as T?
            require(optional == .some(nil), "NULL read as \(T?.self) gives \(String(describing: optional))")
        } else {
            compare(row, index, value, "as an optional", expected) {
                guard let read = try row[index] as T? else { fatalError("\(value) read as \(T?.self) gives nil") }
                return read
            }
        }
    }

    /// Checks that `read` gives `expected`, or when there is none, the mismatch error naming the
    /// column and the statement.
    static func compare<T: Equatable>(
        _ row: Row, _ index: Int, _ value: DatabaseValue, _ way: String, _ expected: T?, _ read: () throws -> T
    ) {
        guard let expected else {
            let error = expectError(SQLITE_MISMATCH, "\(value) read as \(T.self) \(way)", read)
            let name = row.columnNames[index]
            require(error.message.hasPrefix("column \"\(name)\" "), "the error does not name column \(name): \(error.message)")
            require(error.sql == row.layout.sql, "the error does not name the statement: \(error)")
            require(value != .null || error.message.hasSuffix("; read it as an optional"),
                    "the error does not suggest an optional: \(error.message)")
            return
        }
        do {
            let result = try read()
            require(same(result, expected), "\(value) read as \(T.self) \(way) gives \(result), not \(expected)")
        } catch {
            fatalError("\(value) read as \(T.self) \(way) threw \(error)")
        }
    }

    @discardableResult
    static func expectError<T>(_ code: Int32, _ what: @autoclosure () -> String, _ read: () throws -> T) -> SQLiteError {
        do {
            let result = try read()
            fatalError("\(what()) gave \(result), not an error")
        } catch let error as SQLiteError {
            require(error.extendedCode == code, "\(what()) threw SQLite code \(error.extendedCode), not \(code): \(error)")
            return error
        } catch {
            fatalError("\(what()) threw \(type(of: error)), not a SQLiteError: \(error)")
        }
    }

    /// Equality that takes NaN for NaN.
    static func same<T: Equatable>(_ a: T, _ b: T) -> Bool {
        if let x = a as? Double, let y = b as? Double, x.isNaN, y.isNaN { return true }
        return a == b
    }

    // The reference conversions: a number reads as an integer only when it is one exactly, text
    // reads as bytes (its UTF-8), and nothing else converts across storage classes.

    static func expectedInt64(_ value: DatabaseValue) -> Int64? {
        switch value {
        case .integer(let integer): return integer
        case .real(let real) where real.rounded() == real && real >= -0x1p63 && real < 0x1p63: return Int64(real)
        default: return nil
        }
    }

    static func expectedDouble(_ value: DatabaseValue) -> Double? {
        switch value {
        case .integer(let integer): return Double(integer)
        case .real(let real): return real
        default: return nil
        }
    }

    static func expectedString(_ value: DatabaseValue) -> String? {
        if case .text(let text) = value { return text }
        return nil
    }

    static func expectedData(_ value: DatabaseValue) -> Data? {
        switch value {
        case .blob(let data): return data
        case .text(let text): return Data(text.utf8)
        default: return nil
        }
    }
}
