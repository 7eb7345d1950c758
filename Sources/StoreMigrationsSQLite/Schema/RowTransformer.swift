#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import Foundation
import StoreMigrations

/// The statements and name look-ups of one row transform over a table, made once and used for
/// each batch: rows read in key order after a key (keyset pagination, so that every batch costs
/// the same however far into the table it is), each written back by one prepared `UPDATE`.
///
/// The three buffers below are used by one call of ``run(after:limit:_:)`` at a time, on the
/// thread that owns the transformer, and never handed out: the runtime's exclusivity checks on
/// a class's stored properties, made at every access in the row loop, cost more per row than
/// the rest of the loop's bookkeeping.
final class RowTransformer {
    private let db: Database
    private let table: String
    private let quotedTable: String
    private let filter: String
    private let columns: [String]
    private let key: [String]
    private let written: [String]
    private let keyPositions: [Int]
    private let writtenPositions: [Int]
    private let firstBatch: Statement
    private let nextBatch: Statement
    private let update: Statement?
    /// The names `transform` returns, resolved once per position in what it returns: the same
    /// literal comes back for every row, and comparing it with the name seen last at its position
    /// costs less than hashing it, let alone comparing names without regard to case.
    @exclusivity(unchecked) private var resolvedNames: [(name: String, index: Int)] = []
    /// The `UPDATE`'s arguments, overwritten in place for every row: the written columns, then
    /// the key.
    @exclusivity(unchecked) private var arguments: [DatabaseValue]
    /// One array for every batch: grown row by row, a batch's array cost a row more than its
    /// own appends.
    @exclusivity(unchecked) private var batch: [Row] = []

    init(_ db: Database, table: String, columns: [String], condition: String?) throws {
        guard let table = try db.canonicalTableName(table) else { throw db.noSuchTable(table) }
        let info = try db.tableInfo(table)
        let columns = try columns.map { column in
            guard let found = info.first(where: { db.sameName($0.name, column) }) else {
                throw db.error(
                    code: SQLITE_ERROR,
                    message: "table \(table) has no column named \(column); its columns are "
                        + info.map(\.name).joined(separator: ", "),
                    sql: nil)
            }
            return found.name
        }
        let key = try db.pagingKey(of: table, columns: info)
        let written = columns.filter { column in !key.contains { db.sameName($0, column) } }
        let quotedTable = Database.quoted(table)
        let keyList = key.map(Database.quoted).joined(separator: ", ")
        // Listed columns first, then the key's columns that are not listed: a selected row is
        // handed to `transform` as it is. A listed key column is selected once, not twice.
        let unlistedKey = key.filter { column in !columns.contains { db.sameName($0, column) } }
        let selected = columns + unlistedKey
        let selection = selected.map(Database.quoted).joined(separator: ", ")
        let filter = condition.map { " AND (\($0))" } ?? ""
        let keyPlaceholders = key.map { _ in "?" }.joined(separator: ", ")
        self.db = db
        self.table = table
        self.quotedTable = quotedTable
        self.filter = filter
        self.columns = columns
        self.key = key
        self.written = written
        self.keyPositions = key.map { column in selected.firstIndex { db.sameName($0, column) }! }
        // Where each written column's current value sits in a selected row.
        self.writtenPositions = written.map { column in columns.firstIndex { db.sameName($0, column) }! }
        firstBatch = try db.prepare(
            "SELECT \(selection) FROM \(quotedTable) WHERE 1\(filter) ORDER BY \(keyList) LIMIT ?")
        nextBatch = try db.prepare("""
            SELECT \(selection) FROM \(quotedTable) WHERE (\(keyList)) > (\(keyPlaceholders))\(filter)
            ORDER BY \(keyList) LIMIT ?
            """)
        update = written.isEmpty ? nil : try db.prepare("""
            UPDATE \(quotedTable) SET \(written.map { "\(Database.quoted($0)) = ?" }.joined(separator: ", "))
            WHERE (\(keyList)) = (\(keyPlaceholders))
            """)
        arguments = [DatabaseValue](repeating: .null, count: written.count + key.count)
    }

    /// How many rows the condition selects.
    func count() throws -> Int {
        try db.scalar("SELECT count(*) FROM \(quotedTable) WHERE 1\(filter)", as: Int.self) ?? 0
    }

    /// Transforms at most `limit` rows after `lastKey` (from the first row when `nil`).
    func run(
        after lastKey: [DatabaseValue]?, limit: Int, _ transform: (Row) throws -> KeyValuePairs<String, DatabaseValue>?
    ) throws -> (visited: Int, updated: Int, lastKey: [DatabaseValue]?) {
        batch.removeAll(keepingCapacity: true)
        if batch.capacity < limit { batch.reserveCapacity(min(limit, 1 << 16)) }
        if let lastKey {
            guard lastKey.count == key.count else { throw cursorMismatch(lastKey) }
            try nextBatch.forEachRow(arguments: lastKey + [.integer(Int64(limit))]) { batch.append($0) }
        } else {
            try firstBatch.forEachRow(arguments: [.integer(Int64(limit))]) { batch.append($0) }
        }
        var updated = 0
        for row in batch {
            guard let changes = try transform(row) else { continue }
            for (index, position) in writtenPositions.enumerated() { arguments[index] = row.values[position] }
            for (offset, (name, value)) in changes.enumerated() {
                do {
                    arguments[try writtenIndex(of: name, at: offset, in: row)] = value
                } catch {
                    // Returning a key's own value unchanged is allowed: it changes nothing.
                    if let position = columns.firstIndex(where: { db.sameName($0, name) }), row.values[position] == value { continue }
                    throw error
                }
            }
            for (index, position) in keyPositions.enumerated() { arguments[written.count + index] = row.values[position] }
            if let update {
                try update.execute(arguments: arguments)
                updated += 1
            }
        }
        return (batch.count, updated, batch.last.map { last in keyPositions.map { last.values[$0] } })
    }

    private func writtenIndex(of name: String, at position: Int, in row: Row) throws -> Int {
        if position < resolvedNames.count, resolvedNames[position].name == name { return resolvedNames[position].index }
        guard let index = written.firstIndex(where: { db.sameName($0, name) }) else {
            throw db.refusedChange(to: name, in: table, of: row, columns: columns)
        }
        if position < resolvedNames.count {
            resolvedNames[position] = (name, index)
        } else if position == resolvedNames.count {
            resolvedNames.append((name, index))
        }
        return index
    }

    private func cursorMismatch(_ lastKey: [DatabaseValue]) -> SQLiteError {
        db.error(
            code: SQLITE_MISUSE,
            message: "the recorded cursor \(Self.cursor(after: lastKey)) does not fit the key of table \(table) "
                + "(\(key.joined(separator: ", ")))",
            sql: nil)
    }

    /// The cursor a batch records: the last key visited, as JSON (integers as numbers, text as
    /// strings, `{"real": x}`, `{"blob": base64}`, `null`), which reads back to the same values.
    static func cursor(after key: [DatabaseValue]) -> String {
        let objects: [Any] = key.map { value -> Any in
            switch value {
            case .null: return NSNull()
            case .integer(let number): return number
            case .real(let number): return ["real": number]
            case .text(let text): return text
            case .blob(let data): return ["blob": data.base64EncodedString()]
            }
        }
        let data = (try? JSONSerialization.data(withJSONObject: objects, options: [.sortedKeys])) ?? Data("[]".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// The key a ``cursor(after:)`` stands for.
    static func key(fromCursor cursor: String, in db: Database) throws -> [DatabaseValue] {
        func unreadable() -> SQLiteError {
            db.error(code: SQLITE_MISUSE, message: "the recorded cursor \(cursor) is not a row transform's key", sql: nil)
        }
        guard let objects = try? JSONSerialization.jsonObject(with: Data(cursor.utf8)) as? [Any] else { throw unreadable() }
        return try objects.map { object -> DatabaseValue in
            switch object {
            case is NSNull: return .null
            case let text as String: return .text(text)
            case let tagged as [String: Any]:
                if let number = (tagged["real"] as? NSNumber)?.doubleValue { return .real(number) }
                if let text = tagged["blob"] as? String, let data = Data(base64Encoded: text) { return .blob(data) }
                throw unreadable()
            case let number as NSNumber:
                guard let integer = Int64(number.description) ?? Int64(exactly: number.doubleValue) else { throw unreadable() }
                return .integer(integer)
            default:
                throw unreadable()
            }
        }
    }
}
