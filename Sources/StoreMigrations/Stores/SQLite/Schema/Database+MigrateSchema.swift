extension Database {
    /// The operations ``migrateSchema(to:dataLoss:)`` would apply, in order, without applying
    /// them: a dry run.
    ///
    /// ```swift
    /// let changes = try db.schemaChanges(to: notesV2)
    /// print(changes.map(\.description).joined(separator: "\n"))
    /// // rename column nota.fecha to momento
    /// // add column nota: "guid" TEXT
    /// ```
    ///
    /// An empty list means the database already has the declared schema. Drops are listed
    /// whatever the data-loss policy; ``migrateSchema(to:dataLoss:)`` checks it.
    ///
    /// - Throws: ``SchemaMigrationError`` when the declaration is invalid or the changes cannot
    ///   be inferred; ``SQLiteError`` if the schema cannot be read.
    public func schemaChanges(to schema: DeclaredSchema) throws -> [SchemaChange] {
        try plan(to: schema).changes
    }

    /// Brings the database to `schema`: infers the changes from the live schema (see
    /// ``schemaChanges(to:)``) and applies them, keeping the data.
    ///
    /// ```swift
    /// library.register("2.0") { db in
    ///     try db.migrateSchema(to: notesV2)
    /// }
    /// ```
    ///
    /// Lightweight changes are inferred: tables and columns added or dropped, renamed through
    /// their renaming identifier (their data stays), made optional, made required when a
    /// default is given (rows holding `NULL` take it), defaults, keys, unique constraints,
    /// foreign keys and indexes changed. `ALTER TABLE` makes what it can; the other changes
    /// rebuild their table once, rows, indexes and triggers kept. Changes that cannot be inferred
    /// (a type change of a column holding values, a split) throw before anything is changed.
    ///
    /// A column or table that disappears while another appears is dropped, never guessed to be
    /// a rename: declare `renamedFrom:` to keep its data. Dropping a table or column that holds
    /// data is refused unless `dataLoss` allows it.
    ///
    /// Everything runs in a savepoint: if a step fails, the database is as it was. In a
    /// ``SQLiteStore`` migration, progress is reported per change, and cancellation is checked
    /// as often.
    ///
    /// - Parameters:
    ///   - schema: The schema the database should have.
    ///   - dataLoss: Which tables and columns holding data may be dropped; none by default.
    /// - Returns: The changes applied.
    /// - Throws: ``SchemaMigrationError`` before any change for an invalid declaration, changes
    ///   that cannot be inferred, or data the policy does not allow to drop; ``SQLiteError``
    ///   from a step (everything is then undone).
    @discardableResult
    public func migrateSchema(to schema: DeclaredSchema, dataLoss: DataLossPolicy = .refuse) throws -> [SchemaChange] {
        let plan = try plan(to: schema)
        try checkDataLoss(plan.drops, policy: dataLoss)
        try inSavepoint {
            for (done, change) in plan.changes.enumerated() {
                try context?.checkCancellation()
                try apply(change)
                context?.reportProgress(completed: done + 1, of: plan.changes.count)
            }
        }
        return plan.changes
    }

    /// The changes to `schema`, or the error that stops them.
    private func plan(to schema: DeclaredSchema) throws -> SchemaDiff {
        let problems = schema.problems()
        guard problems.isEmpty else { throw SchemaMigrationError.invalidDeclaration(problems: problems, database: path) }
        let diff = try SchemaDiff(from: try self.schema(), to: schema, in: self)
        guard diff.uninferable.isEmpty else {
            throw SchemaMigrationError.needsMappedMigration(problems: diff.uninferable, database: path)
        }
        if let (table, features) = diff.unrebuildable.first {
            throw SchemaMigrationError.cannotRebuild(table: table, features: features, database: path)
        }
        return diff
    }
    /// Throws for the drops `policy` refuses of tables and columns that hold data.
    private func checkDataLoss(_ drops: [SchemaDiff.Drop], policy: DataLossPolicy) throws {
        var problems: [SchemaMigrationError.Problem] = []
        for drop in drops {
            let names = [drop.liveTable] + (drop.declaredTable.map { [$0] } ?? [])
            let added = drop.added.joined(separator: ", ")
            if let column = drop.column {
                guard !policy.allowsDropping(column: column, of: names), try hasValues(in: column, of: drop.liveTable)
                else { continue }
                let hint = drop.added.isEmpty ? "" : " while the declaration adds \(added): if one of them is "
                    + "\(column) renamed, declare it with renamedFrom: \"\(column)\""
                problems.append(.init(
                    table: drop.declaredTable ?? drop.liveTable, column: column,
                    message: "is not declared any more but holds values\(hint)"))
            } else {
                guard !policy.allowsDropping(table: names), try hasRows(in: drop.liveTable) else { continue }
                let hint = drop.added.isEmpty ? "" : " while the declaration creates \(added): if one of them is "
                    + "\(drop.liveTable) renamed, declare it with renamedFrom: \"\(drop.liveTable)\""
                problems.append(.init(
                    table: drop.liveTable, column: nil, message: "is not declared any more but has rows\(hint)"))
            }
        }
        guard problems.isEmpty else { throw SchemaMigrationError.wouldLoseData(problems: problems, database: path) }
    }

    /// Applies one change.
    private func apply(_ change: SchemaChange) throws {
        switch change {
        case let .dropIndex(index, _):
            try execute("DROP INDEX \(Self.quoted(index))")
        case let .renameTable(table, newName):
            try renameTable(table, to: newName)
        case let .renameColumn(column, newName, table):
            try renameColumn(column, to: newName, in: table)
        case let .dropColumn(column, table):
            try dropColumn(column, from: table)
        case let .addColumn(column, table):
            try addColumn(
                column.name, type: column.type, to: table, notNull: column.isNotNull,
                defaultValue: column.defaultValue?.value)
        case let .rebuildTable(table, reasons):
            var copying: [String: String] = [:]
            for case let .alterColumn(old, new) in reasons where new.isNotNull && !old.isNotNull {
                if let defaultValue = new.defaultValue {
                    copying[new.name] = "coalesce(\(Self.quoted(new.name)), \(defaultValue.definitionSQL))"
                }
            }
            try rebuildTable(table.name, definition: table.definitionSQL, copying: copying)
        case let .createTable(table):
            try execute(table.createSQL)
        case let .dropTable(table):
            try execute("DROP TABLE \(Self.quoted(table))")
        case let .createIndex(index, table):
            try execute(index.createSQL(on: table))
        }
    }
}
