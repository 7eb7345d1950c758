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
    ///   - columns: The columns `transform` reads and may write: every column it returns a value
    ///     for must be listed, or the call throws ``SQLiteStoreError/Reason/unlistedColumn(column:table:listed:)``
    ///     and its transaction is rolled back. The table's key (its rowid alias, or the primary
    ///     key of a `WITHOUT ROWID` table) may be read but not changed.
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
        let transformer = try RowTransformer(self, table: table, columns: columns, condition: condition)
        let total = try transformer.count()
        var lastKey: [DatabaseValue]?
        var visited = 0
        var updated = 0
        while true {
            try context?.checkCancellation()
            let batch = try transformer.run(after: lastKey, limit: batchSize, transform)
            visited += batch.visited
            updated += batch.updated
            context?.reportProgress(completed: min(visited, total), of: total)
            guard batch.visited == batchSize, let last = batch.lastKey else { break }
            lastKey = last
        }
        // The count was taken before the closure ran; if it deleted rows, fewer were visited.
        if visited < total { context?.reportProgress(completed: total, of: total) }
        return updated
    }

    /// One batch of a resumable row transform: rewrites at most `batch.limit` rows after
    /// `batch.cursor` (the key of the last row the previous batch visited), as
    /// ``transformRows(in:columns:where:batchSize:_:)`` does, and says where the next batch
    /// starts. The body of
    /// ``StoreMigrations/MigrationManager/registerResumable(_:dependsOn:transformingRowsOf:columns:where:batchSize:deferred:options:_:)``.
    ///
    /// ```swift
    /// library.registerResumable("2.1", deferred: true) { db, batch in
    ///     try db.transformRows(in: "event", columns: ["guid"], where: "guid IS NULL", batch: batch) { _ in
    ///         ["guid": .text(UUID().uuidString)]
    ///     }
    /// }
    /// ```
    public func transformRows(
        in table: String,
        columns: [String],
        where condition: String? = nil,
        batch: BatchRequest,
        _ transform: (Row) throws -> KeyValuePairs<String, DatabaseValue>?
    ) throws -> BatchResult {
        let transformer = try RowTransformer(self, table: table, columns: columns, condition: condition)
        let after = try batch.cursor.map { try RowTransformer.key(fromCursor: $0, in: self) }
        // Counted once, by the first batch; later ones keep what it recorded.
        let total = try batch.total ?? transformer.count()
        let result = try transformer.run(after: after, limit: max(1, batch.limit), transform)
        guard result.visited == max(1, batch.limit), let last = result.lastKey else {
            return .finished(processed: result.visited)
        }
        return .more(cursor: RowTransformer.cursor(after: last), processed: result.visited, total: total)
    }

    /// The error for a value returned for a column `transform` may not change: the key the pages
    /// follow (a misuse of this API), or a column that was not listed (``SQLiteStoreError``).
    func refusedChange(to column: String, in table: String, of row: Row, columns: [String]) -> any Error {
        guard columns.contains(where: { sameName($0, column) }) else {
            return SQLiteStoreError(.unlistedColumn(column: column, table: table, listed: columns), store: "SQLite database \(path)")
        }
        return error(
            code: SQLITE_MISUSE, message: "transformRows cannot change \(table).\(column): rows are visited in the order of it",
            sql: nil)
    }

    /// The columns that identify and order rows: the rowid, or the primary key of a
    /// `WITHOUT ROWID` table.
    func pagingKey(of table: String, columns: [ColumnInfo]) throws -> [String] {
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
