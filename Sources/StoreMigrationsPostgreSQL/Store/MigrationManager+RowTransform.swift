import StoreMigrations

extension MigrationManager where Store == PostgreSQLStore {
    /// Registers the migration to `version` as a resumable rewrite of the rows of `table`, in key
    /// order, batch by batch: each batch's rows and the key of its last row commit together, in
    /// a transaction of their own under the store's advisory lock, so a kill (of a replica, or of
    /// the server) at any moment resumes after the last committed batch and every row is
    /// transformed once, even by a `transform` that is not idempotent. Between two batches the
    /// lock is free: another replica may run the next batch, or the migrations of other stores'
    /// managers their steps. See
    /// ``/StoreMigrations/MigrationManager/registerResumable(_:dependsOn:batchSize:deferred:options:_:)``
    /// for batches, budgets and deferral, and
    /// ``PostgreSQLConnection/transformRows(in:schema:key:columns:where:batch:_:)`` for how rows
    /// are read, locked and written.
    ///
    /// ```swift
    /// orders.register("2.0") { db in try db.execute("ALTER TABLE event ADD COLUMN guid uuid") }
    /// orders.registerResumable(
    ///     "2.0-1", transformingRowsOf: "event", columns: ["guid"], deferred: true
    /// ) { _ in
    ///     ["guid": .text(UUID().uuidString)]
    /// }
    /// ```
    ///
    /// A batch must leave the schema alone (the guard refuses a change with
    /// ``PostgreSQLError/Kind-swift.enum/schemaChangeInBatch``): add columns and indexes in an
    /// ordinary migration registered before this one, as `2.0` above.
    ///
    /// - Parameters:
    ///   - version: The migration's version.
    ///   - dependencies: Migrations of other managers that must be applied first.
    ///   - table: The table, quoted as given.
    ///   - key: A unique, non-null column ordering the rows, read but never written; `nil` for
    ///     the table's primary key, which must then be one column.
    ///   - columns: The columns `transform` reads and may write: a value returned for a column not
    ///     listed fails the migration with ``PostgreSQLError/Kind-swift.enum/unlistedColumn(table:column:)``,
    ///     naming the table, the column and the migration, and its batch is rolled back.
    ///   - condition: An SQL condition selecting the rows, or `nil` for all; the first batch counts
    ///     the rows it selects, for progress.
    ///   - batchSize: How many rows a batch rewrites; by default as many as take about 100 ms.
    ///   - deferred: Whether `run()` may return before the migration is done.
    ///   - options: The migration's name, and a fingerprint that changes with `transform` (a
    ///     closure the library cannot read), if edits after it ran should be reported.
    ///   - transform: The new values of some of `columns`, by name; `nil` leaves the row as it is.
    public func registerResumable(
        _ version: Version, dependsOn dependencies: [MigrationReference] = [], transformingRowsOf table: String,
        key: String? = nil, columns: [String], where condition: String? = nil, batchSize: BatchSize = .automatic,
        deferred: Bool = false, options: MigrationOptions = MigrationOptions(),
        _ transform: @escaping @Sendable (PostgreSQLRow) throws -> [String: PostgreSQLValue]?
    ) {
        registerResumable(version, dependsOn: dependencies, batchSize: batchSize, deferred: deferred, options: options) { db, batch in
            try db.transformRows(in: table, key: key, columns: columns, where: condition, batch: batch, transform)
        }
    }
}
