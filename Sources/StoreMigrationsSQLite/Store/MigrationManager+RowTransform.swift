import Foundation
import StoreMigrations

extension MigrationManager where Store == SQLiteStore {
    /// Registers the migration to `version` as a resumable rewrite of the rows of `table`, in key
    /// order, batch by batch: each batch's rows and the key of its last row commit together, so a
    /// kill at any moment resumes after the last committed batch and every row is transformed
    /// once, even by a `transform` that is not idempotent. See
    /// ``/StoreMigrations/MigrationManager/registerResumable(_:dependsOn:batchSize:deferred:options:_:)`` for batches,
    /// budgets and deferral, and ``Database/transformRows(in:columns:where:batchSize:_:)`` for
    /// what `transform` may return.
    ///
    /// ```swift
    /// library.register("2.0") { db in try db.addColumn("guid", type: .text, to: "event") }
    /// library.registerResumable(
    ///     "2.0-1", transformingRowsOf: "event", columns: ["guid"], deferred: true
    /// ) { _ in
    ///     ["guid": .text(UUID().uuidString)]
    /// }
    /// ```
    ///
    /// `columns` lists every column `transform` reads or writes: a value returned for a column
    /// not listed fails the migration with ``SQLiteStoreError/Reason/unlistedColumn(column:table:listed:)``,
    /// naming the table, the column and the migration, and its batch is rolled back.
    ///
    /// The rows the condition selects are counted once, by the first batch, for progress. The
    /// transform is a closure the library cannot read: give `options` a fingerprint that changes
    /// with it, if edits after it ran should be reported.
    public func registerResumable(
        _ version: Version, dependsOn dependencies: [MigrationReference] = [], transformingRowsOf table: String,
        columns: [String], where condition: String? = nil, batchSize: BatchSize = .automatic, deferred: Bool = false,
        options: MigrationOptions = MigrationOptions(),
        _ transform: @escaping @Sendable (Row) throws -> KeyValuePairs<String, DatabaseValue>?
    ) {
        registerResumable(version, dependsOn: dependencies, batchSize: batchSize, deferred: deferred, options: options) { db, batch in
            try db.transformRows(in: table, columns: columns, where: condition, batch: batch, transform)
        }
    }
}
