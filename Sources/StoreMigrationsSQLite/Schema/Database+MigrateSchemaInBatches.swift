import StoreMigrations

extension Database {
    /// One batch of a schema migration whose mapped rows are copied batch by batch, so that a
    /// kill resumes after the last committed batch: the resumable form of
    /// ``migrateSchema(to:dataLoss:mappings:)``. Register it with
    /// ``StoreMigrations/MigrationManager/registerResumable(_:dependsOn:migratingSchemaTo:dataLoss:mappings:batchSize:deferred:options:)``
    /// rather than calling it yourself.
    ///
    /// The first batch checks the declaration and the data-loss policy, sets the mapped tables
    /// aside and brings the schema to `schema` (the declared tables empty), then maps rows; each
    /// later batch maps the next rows of the set-aside tables, one table after the other in the
    /// order the schema plan maps them, each in key order; the last drops the set-aside tables.
    /// Each batch's rows, and the rows ``MappingDestination/insertOnce(into:key:_:)`` created,
    /// commit with its cursor, so every source row is mapped once, and a key given to
    /// `insertOnce` by an earlier batch returns that batch's row.
    ///
    /// Between two batches the database has the new schema with part of the rows: an app that
    /// reads it then (a deferred migration) sees the mapped tables partly filled, and must not
    /// write them: a row it inserts could take the key of a row not mapped yet. Foreign keys
    /// hold at every commit: a batch's rows may refer only to rows mapped by then (map parent
    /// tables in mappings that come first), and a table that other tables refer to cannot be
    /// mapped unless they are mapped too: use the single-transaction form with
    /// ``SQLiteStore/ForeignKeyCheck/deferred`` for it.
    ///
    /// - Parameters:
    ///   - schema: The schema the database should have.
    ///   - dataLoss: Which tables and columns holding data may be dropped; none by default.
    ///   - mappings: Entity mappings for the tables whose rows are rewritten by code; the same,
    ///     in the same order, at every batch.
    ///   - batch: The batch to run, as the coordinator asks for it.
    /// - Returns: ``/StoreMigrations/BatchResult/more(cursor:processed:total:)`` while rows are
    ///   left, with the number of source rows in all; ``/StoreMigrations/BatchResult/finished(processed:)``
    ///   with the last batch.
    /// - Throws: ``SchemaMigrationError`` from the first batch, before any change, as
    ///   ``migrateSchema(to:dataLoss:mappings:)`` throws; ``SQLiteError`` for a recorded cursor
    ///   that does not fit the mappings; a mapping's error (the batch is rolled back).
    public func migrateSchema(
        to schema: DeclaredSchema, dataLoss: DataLossPolicy = .refuse, mappings: [EntityMapping], batch: BatchRequest
    ) throws -> BatchResult {
        var limit = max(1, batch.limit)
        var total = batch.total
        var cursor: MappedMigrationCursor
        if let recorded = batch.cursor {
            cursor = try MappedMigrationCursor(decoding: recorded, mappings: mappings, in: self)
        } else {
            (cursor, total) = try beginMappedMigration(to: schema, dataLoss: dataLoss, mappings: mappings)
        }
        let destination = MappingDestination(database: self, keyTable: cursor.keyTable)
        var processed = 0
        while cursor.position < cursor.sources.count {
            let source = cursor.sources[cursor.position]
            let after = try cursor.after.map { try RowTransformer.key(fromCursor: $0, in: self) }
            let mapped = try mapRows(
                of: source.table, through: mappings[source.mapping], into: destination, after: after, limit: limit)
            processed += mapped.visited
            if mapped.visited == limit, let last = mapped.lastKey {
                cursor.after = RowTransformer.cursor(after: last)
                return .more(cursor: cursor.encoded, processed: processed, total: total)
            }
            limit -= mapped.visited
            cursor.position += 1
            cursor.after = nil
            // A table that ends exactly where the batch is full leaves the next to the next batch.
            if limit == 0, cursor.position < cursor.sources.count {
                return .more(cursor: cursor.encoded, processed: processed, total: total)
            }
        }
        try allowingSchemaChanges {
            // Only once every mapping has read its rows, as the single-transaction form does.
            try dropSetAside(cursor.sources.map(\.table))
            try execute("DROP TABLE \(Self.quoted(cursor.keyTable))")
            try checkViewsCompile(after: "the schema migration", advice: "before the migration")
        }
        return .finished(processed: processed)
    }

    /// The first batch's schema work: every check of ``migrateSchema(to:dataLoss:mappings:)``
    /// before any change, then the mapped tables set aside and every change but the mapping of
    /// rows applied. Returns the cursor of the first row and the number of rows to map.
    private func beginMappedMigration(
        to schema: DeclaredSchema, dataLoss: DataLossPolicy, mappings: [EntityMapping]
    ) throws -> (MappedMigrationCursor, Int) {
        let plan = try plan(to: schema, mappings: mappings)
        try checkDataLoss(plan.drops, policy: dataLoss)
        try checkMappedTablesAreNotReferred(by: mappings, resumable: true)
        // Mapped in the order the plan maps their tables, as the single-transaction form does.
        let mappedInPlan = plan.changes.compactMap { change -> String? in
            if case .mapRows(let source) = change { return source }
            return nil
        }
        let order = mappings.indices.sorted { left, right in
            let position = { (index: Int) in mappedInPlan.firstIndex { self.sameName($0, mappings[index].source) } ?? Int.max }
            return (position(left), left) < (position(right), right)
        }
        return try allowingSchemaChanges {
            try inSavepoint {
                var sources: [MappedMigrationCursor.Source] = []
                var rows = 0
                for index in order {
                    let table = try setAsideForMapping(mappings[index].source)
                    sources.append(.init(mapping: index, table: table))
                    rows += try scalar("SELECT count(*) FROM \(Self.quoted(table))", as: Int.self) ?? 0
                }
                let keyTable = try unusedTableName(startingWith: "store_migrations_mapping_keys")
                try MappingDestination.createKeyTable(keyTable, in: self)
                // Rows are mapped by the batches, after every table of the new schema exists.
                for change in plan.changes { try apply(change) { _ in } }
                return (MappedMigrationCursor(sources: sources, keyTable: keyTable), rows)
            }
        }
    }
}
