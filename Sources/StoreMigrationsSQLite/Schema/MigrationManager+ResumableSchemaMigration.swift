import StoreMigrations

extension MigrationManager where Store == SQLiteStore {
    /// Registers the migration to `version` as a resumable schema migration: the first batch
    /// brings the schema to `schema` as ``Database/migrateSchema(to:dataLoss:mappings:)`` does,
    /// and the rows of the mapped tables are then copied through their mappings batch by batch,
    /// each batch committing with its cursor, so a kill at any moment resumes after the last
    /// committed batch and every source row is mapped once. See
    /// ``Database/migrateSchema(to:dataLoss:mappings:batch:)`` for what holds between batches.
    ///
    /// ```swift
    /// library.registerResumable("2.0", migratingSchemaTo: notesV2, mappings: [
    ///     EntityMapping(from: "note") { note, destination in
    ///         try destination.insert(into: "note", ["id": note["id"], "body": note["text"]])
    ///     },
    /// ])
    /// ```
    ///
    /// The declaration, the mappings' sources and the data-loss policy are checked by the first
    /// batch, before any change. Keep a started migration's mappings as they are: the batches of
    /// a later launch are given them again, in the same order. The fingerprint is made as
    /// ``register(_:dependsOn:options:schema:dataLoss:mappings:)`` makes it.
    public func registerResumable(
        _ version: Version, dependsOn dependencies: [MigrationReference] = [], migratingSchemaTo schema: DeclaredSchema,
        dataLoss: DataLossPolicy = .refuse, mappings: [EntityMapping], batchSize: BatchSize = .automatic,
        deferred: Bool = false, options: MigrationOptions = MigrationOptions()
    ) {
        let options = options.fingerprinting(schema, mappings: mappings)
        registerResumable(version, dependsOn: dependencies, batchSize: batchSize, deferred: deferred, options: options) { db, batch in
            try db.migrateSchema(to: schema, dataLoss: dataLoss, mappings: mappings, batch: batch)
        }
    }
}
