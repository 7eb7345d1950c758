#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif

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
    ///   - transform: Returns the new values of some of `columns`, by name; the others keep
    ///     their values. Returning `nil` leaves the row untouched.
    /// - Returns: The number of rows written.
    @discardableResult
    public func transformRows(
        in table: String,
        columns: [String],
        where condition: String? = nil,
        batchSize: Int = 1_000,
        _ transform: (Row) throws -> [String: DatabaseValue]?
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
        let selection = (key + columns).map(Self.quoted).joined(separator: ", ")
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
        let layout = Row.Layout(names: columns, sql: nextBatch.sql, path: path)

        var lastKey: [DatabaseValue]?
        var visited = 0
        var updatedCount = 0
        while true {
            try context?.checkCancellation()
            let batch = try lastKey.map { try nextBatch.rows(arguments: $0 + [.integer(Int64(batchSize))]) }
                ?? firstBatch.rows(arguments: [.integer(Int64(batchSize))])
            for selected in batch {
                let keyValues = Array(selected.values.prefix(key.count))
                let row = Row(values: Array(selected.values.dropFirst(key.count)), layout: layout)
                guard let changes = try transform(row) else { continue }
                try checkChanges(changes, of: row, in: table, writable: written)
                var newValues: [DatabaseValue] = []
                for column in written {
                    let change = changes.first { sameName($0.key, column) }?.value
                    newValues.append(try change ?? row[column])
                }
                if let update {
                    try update.execute(arguments: newValues + keyValues)
                    updatedCount += 1
                }
            }
            visited += batch.count
            context?.reportProgress(completed: min(visited, total), of: total)
            guard batch.count == batchSize, let last = batch.last else { break }
            lastKey = Array(last.values.prefix(key.count))
        }
        // The count was taken before the closure ran; if it deleted rows, fewer were visited.
        if visited < total { context?.reportProgress(completed: total, of: total) }
        return updatedCount
    }

    /// Refuses changes to columns that were not listed, or to the key the pages follow.
    private func checkChanges(
        _ changes: [String: DatabaseValue], of row: Row, in table: String, writable: [String]
    ) throws {
        for (column, value) in changes where !writable.contains(where: { sameName($0, column) }) {
            let listed = row.columnNames.contains { sameName($0, column) }
            if listed, try row[column] as DatabaseValue == value { continue }
            throw error(
                code: SQLITE_MISUSE,
                message: listed
                    ? "transformRows cannot change \(table).\(column): rows are visited in the order of it"
                    : "transformRows returned a value for \(column), which is not among the columns "
                        + "listed (\(row.columnNames.joined(separator: ", ")))",
                sql: nil)
        }
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
