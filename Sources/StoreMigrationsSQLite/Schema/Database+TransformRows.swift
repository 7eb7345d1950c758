#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import StoreMigrations

extension Database {
    /// Rewrites rows of a table in Swift, batch by batch, in constant memory: for changes SQL
    /// cannot express, such as generating identifiers or re-encoding data.
    ///
    /// ```swift
    /// try db.addColumn("guid", type: .text, to: "event")
    /// try db.transformRows(in: "event", columns: ["title", "guid"], where: "guid IS NULL") { row in
    ///     ["guid": .text(UUID().uuidString)]
    /// }
    /// ```
    ///
    /// Rows are read in batches of `batchSize` in key order, each batch starting after the last
    /// key of the previous one (keyset pagination: every batch costs the same however far into
    /// the table it is), and each row is written back by one prepared `UPDATE`. Each row is
    /// visited once. After each batch the migration's progress is reported and cancellation is
    /// checked. It runs inside the migration's transaction, like the rest of the body.
    ///
    /// - Parameters:
    ///   - table: The table to rewrite.
    ///   - columns: The columns `transform` reads and may write. The table's key (its rowid
    ///     alias, or the primary key of a `WITHOUT ROWID` table) may be read but not changed.
    ///   - condition: An SQL condition selecting the rows to visit, such as `"guid IS NULL"`;
    ///     all rows when `nil`.
    ///   - batchSize: How many rows are held in memory at once.
    ///   - transform: Returns the new values of some of `columns`, by name, as a dictionary
    ///     literal; the others keep their values. Returning `nil` leaves the row untouched.
    /// - Returns: The number of rows written.
    @discardableResult
    public func transformRows(
        in table: String,
        columns: [String],
        where condition: String? = nil,
        batchSize: Int = 1_000,
        _ transform: (Row) throws -> KeyValuePairs<String, DatabaseValue>?
    ) throws -> Int {
        guard batchSize > 0 else {
            throw error(code: SQLITE_MISUSE, message: "batchSize must be positive, not \(batchSize)", sql: nil)
        }
        guard let table = try canonicalTableName(table) else { throw noSuchTable(table) }
        let info = try tableInfo(table)
        let columns = try columns.map { column in
            guard let found = info.first(where: { sameName($0.name, column) }) else {
                throw error(
                    code: SQLITE_ERROR,
                    message: "table \(table) has no column named \(column); its columns are "
                        + info.map(\.name).joined(separator: ", "),
                    sql: nil)
            }
            return found.name
        }
        let key = try pagingKey(of: table, columns: info)
        let written = columns.filter { column in !key.contains { sameName($0, column) } }

        let quotedTable = Self.quoted(table)
        let keyList = key.map(Self.quoted).joined(separator: ", ")
        // Listed columns first, then the key's columns that are not listed: a selected row is
        // handed to `transform` as it is. A listed key column is selected once, not twice.
        let unlistedKey = key.filter { column in !columns.contains { sameName($0, column) } }
        let selected = columns + unlistedKey
        let keyPositions = key.map { column in selected.firstIndex { sameName($0, column) }! }
        let selection = selected.map(Self.quoted).joined(separator: ", ")
        let filter = condition.map { " AND (\($0))" } ?? ""
        let keyPlaceholders = key.map { _ in "?" }.joined(separator: ", ")
        let total = try scalar("SELECT count(*) FROM \(quotedTable) WHERE 1\(filter)", as: Int.self) ?? 0
        let firstBatch = try makeStatement(
            "SELECT \(selection) FROM \(quotedTable) WHERE 1\(filter) ORDER BY \(keyList) LIMIT ?")
        let nextBatch = try makeStatement("""
            SELECT \(selection) FROM \(quotedTable) WHERE (\(keyList)) > (\(keyPlaceholders))\(filter)
            ORDER BY \(keyList) LIMIT ?
            """)
        let update = written.isEmpty ? nil : try makeStatement("""
            UPDATE \(quotedTable) SET \(written.map { "\(Self.quoted($0)) = ?" }.joined(separator: ", "))
            WHERE (\(keyList)) = (\(keyPlaceholders))
            """)
        // Where each written column's current value sits in a selected row.
        let writtenPositions = written.map { column in columns.firstIndex { sameName($0, column) }! }
        // The names `transform` returns, resolved once per position in what it returns: the same
        // literal comes back for every row, and comparing it with the name seen last at its
        // position costs less than hashing it, let alone comparing names without regard to case.
        var resolvedNames: [(name: String, index: Int)] = []
        func writtenIndex(of name: String, at position: Int, in row: Row) throws -> Int {
            if position < resolvedNames.count, resolvedNames[position].name == name { return resolvedNames[position].index }
            guard let index = written.firstIndex(where: { sameName($0, name) }) else {
                throw refusedChange(to: name, in: table, of: row, columns: columns)
            }
            if position < resolvedNames.count {
                resolvedNames[position] = (name, index)
            } else if position == resolvedNames.count {
                resolvedNames.append((name, index))
            }
            return index
        }

        var lastKey: [DatabaseValue]?
        var visited = 0
        var updatedCount = 0
        // The UPDATE's arguments, overwritten in place for every row: the written columns, then
        // the key.
        var arguments = [DatabaseValue](repeating: .null, count: written.count + key.count)
        // One array for every batch, with room for a whole one: grown row by row, a batch's
        // array cost a row more than its own appends.
        var batch: [Row] = []
        batch.reserveCapacity(min(batchSize, total))
        while true {
            try context?.checkCancellation()
            batch.removeAll(keepingCapacity: true)
            if let lastKey {
                try nextBatch.forEachRow(arguments: lastKey + [.integer(Int64(batchSize))]) { batch.append($0) }
            } else {
                try firstBatch.forEachRow(arguments: [.integer(Int64(batchSize))]) { batch.append($0) }
            }
            for row in batch {
                guard let changes = try transform(row) else { continue }
                for (index, position) in writtenPositions.enumerated() { arguments[index] = row.values[position] }
                for (offset, (name, value)) in changes.enumerated() {
                    do {
                        arguments[try writtenIndex(of: name, at: offset, in: row)] = value
                    } catch {
                        // Returning a key's own value unchanged is allowed: it changes nothing.
                        if let position = columns.firstIndex(where: { sameName($0, name) }), row.values[position] == value { continue }
                        throw error
                    }
                }
                for (index, position) in keyPositions.enumerated() { arguments[written.count + index] = row.values[position] }
                if let update {
                    try update.execute(arguments: arguments)
                    updatedCount += 1
                }
            }
            visited += batch.count
            context?.reportProgress(completed: min(visited, total), of: total)
            guard batch.count == batchSize, let last = batch.last else { break }
            lastKey = keyPositions.map { last.values[$0] }
        }
        // The count was taken before the closure ran; if it deleted rows, fewer were visited.
        if visited < total { context?.reportProgress(completed: total, of: total) }
        return updatedCount
    }

    /// The error for a value returned for a column `transform` may not change: the key the pages
    /// follow, or a column that was not listed.
    private func refusedChange(to column: String, in table: String, of row: Row, columns: [String]) -> SQLiteError {
        let listed = columns.contains { sameName($0, column) }
        return error(
            code: SQLITE_MISUSE,
            message: listed
                ? "transformRows cannot change \(table).\(column): rows are visited in the order of it"
                : "transformRows returned a value for \(column), which is not among the columns "
                    + "listed (\(columns.joined(separator: ", ")))",
            sql: nil)
    }

    /// The columns that identify and order rows: the rowid, or the primary key of a
    /// `WITHOUT ROWID` table.
    private func pagingKey(of table: String, columns: [ColumnInfo]) throws -> [String] {
        if try isWithoutRowID(table) {
            return columns.filter { $0.primaryKeyPosition > 0 }
                .sorted { $0.primaryKeyPosition < $1.primaryKeyPosition }
                .map(\.name)
        }
        if Self.hasRowIDAlias(columns), let alias = columns.first(where: { $0.primaryKeyPosition > 0 }) {
            return [alias.name]
        }
        // A table may have a real column named like one of the rowid's aliases.
        let alias = ["rowid", "_rowid_", "oid"].first { name in !columns.contains { sameName($0.name, name) } }
        guard let alias else {
            throw error(
                code: SQLITE_MISUSE,
                message: "table \(table) has columns named rowid, _rowid_ and oid, which hide its rowid",
                sql: nil)
        }
        return [alias]
    }
}
