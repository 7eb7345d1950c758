#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import StoreMigrations

extension Database {
    /// The operations ``migrateSchema(to:dataLoss:mappings:)`` would apply, in order, without
    /// applying them: a dry run.
    ///
    /// ```swift
    /// let changes = try db.schemaChanges(to: notesV2)
    /// print(changes.map(\.description).joined(separator: "\n"))
    /// // rename column nota.fecha to momento
    /// // add column nota: "guid" TEXT
    /// ```
    ///
    /// An empty list means the database already has the declared schema. Drops are listed
    /// whatever the data-loss policy; ``migrateSchema(to:dataLoss:mappings:)`` checks it.
    ///
    /// - Parameters:
    ///   - schema: The schema the database should have.
    ///   - mappings: The entity mappings the migration would run; only their sources are used.
    /// - Throws: ``SchemaMigrationError`` when the declaration is invalid or the changes cannot
    ///   be inferred; ``SQLiteError`` if the schema cannot be read.
    public func schemaChanges(to schema: DeclaredSchema, mappings: [EntityMapping] = []) throws -> [SchemaChange] {
        try plan(to: schema, mappings: mappings).changes
    }

    /// Brings the database to `schema`: infers the changes from the live schema (see
    /// ``schemaChanges(to:mappings:)``) and applies them, keeping the data.
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
    /// (a type change of a column holding values, a split) throw before anything is changed:
    /// give the table an ``EntityMapping`` instead, which streams its rows into the new tables.
    ///
    /// A column or table that disappears while another appears is dropped, never guessed to be
    /// a rename: declare `renamedFrom:` to keep its data. Dropping a table or column that holds
    /// data is refused unless `dataLoss` allows it.
    ///
    /// Everything runs in a savepoint: if a step fails, the database is as it was. In a
    /// ``SQLiteStore`` migration, progress is reported per change and per batch of mapped rows,
    /// and cancellation is checked as often.
    ///
    /// - Parameters:
    ///   - schema: The schema the database should have.
    ///   - dataLoss: Which tables and columns holding data may be dropped; none by default.
    ///   - mappings: Entity mappings for the tables whose rows must be rewritten by code.
    /// - Returns: The changes applied.
    /// - Throws: ``SchemaMigrationError`` before any change for an invalid declaration, changes
    ///   that cannot be inferred, or data the policy does not allow to drop; ``SQLiteError``, or
    ///   a mapping's error, from a step (everything is then undone).
    @discardableResult
    public func migrateSchema(
        to schema: DeclaredSchema, dataLoss: DataLossPolicy = .refuse, mappings: [EntityMapping] = []
    ) throws -> [SchemaChange] {
        let plan = try plan(to: schema, mappings: mappings)
        try checkDataLoss(plan.drops, policy: dataLoss)
        if !mappings.isEmpty, try pragmaFlag("foreign_keys") {
            try checkMappedTablesAreNotReferred(by: mappings)
        }
        try inSavepoint {
            var setAside: [String: (mapping: EntityMapping, table: String, rows: Int)] = [:]
            for mapping in mappings {
                let table = try setAsideForMapping(mapping.source)
                let rows = try scalar("SELECT count(*) FROM \(Self.quoted(table))", as: Int.self) ?? 0
                setAside[mapping.source.lowercased()] = (mapping, table, rows)
            }
            let total = plan.changes.count + setAside.values.reduce(0) { $0 + $1.rows }
            var done = 0
            func advance(by units: Int) {
                done += units
                context?.reportProgress(completed: done, of: total)
            }
            let destination = MappingDestination(database: self)
            for change in plan.changes {
                try context?.checkCancellation()
                try apply(change) { source in
                    // The plan maps exactly the mappings' sources.
                    let (mapping, table, _) = setAside[source.lowercased()]!
                    try mapRows(of: table, through: mapping, into: destination, progress: advance(by:))
                }
                advance(by: 1)
            }
            // Only once every mapping has read its rows: with foreign keys enforced, dropping a
            // set-aside table runs the actions of the set-aside tables that refer to it.
            try dropSetAside(setAside.values.map(\.table))
            // DROP TABLE and the mapped tables leave views naming what is gone unchecked.
            try checkViewsCompile(after: "the schema migration", advice: "before the migration")
        }
        return plan.changes
    }

    /// The changes to `schema`, or the error that stops them.
    func plan(to schema: DeclaredSchema, mappings: [EntityMapping]) throws -> SchemaDiff {
        var problems = schema.problems()
        let live = try self.schema()
        var sources = Set<String>()
        for mapping in mappings {
            guard let table = live.table(named: mapping.source) else {
                problems.append(.init(
                    table: mapping.source, column: nil,
                    message: "is the source of an entity mapping, but the database has no such table"))
                continue
            }
            if !sources.insert(table.name.lowercased()).inserted {
                problems.append(.init(table: table.name, column: nil, message: "has two entity mappings; merge them"))
            }
            if mapping.batchSize <= 0 {
                problems.append(.init(
                    table: table.name, column: nil,
                    message: "has an entity mapping whose batchSize is \(mapping.batchSize); make it positive"))
            }
            for column in mapping.columns ?? [] where table.column(named: column) == nil {
                problems.append(.init(
                    table: table.name, column: column,
                    message: "is read by the table's entity mapping, but the table has no such column"))
            }
        }
        guard problems.isEmpty else { throw SchemaMigrationError.invalidDeclaration(problems: problems, database: path) }

        let diff = try SchemaDiff(from: live, to: schema, mapping: sources, in: self)
        guard diff.uninferable.isEmpty else {
            throw SchemaMigrationError.needsMappedMigration(problems: diff.uninferable, database: path)
        }
        if let (table, features) = diff.unrebuildable.first {
            throw SchemaMigrationError.cannotRebuild(table: table, features: features, database: path)
        }
        return diff
    }

    /// Throws if a table other than the mapped ones refers to a mapped table. With foreign keys
    /// enforced, SQLite repoints such references when the table is set aside, and dropping it
    /// afterwards would delete or orphan the referring rows. Without enforcement (a store's
    /// ``SQLiteStore/ForeignKeyCheck/deferred`` mode) the references stay on the table's name,
    /// which the new table takes, and the store checks them before commit.
    ///
    /// A resumable migration is refused such a table whatever the check: between two of its
    /// batches the referring rows would point at rows not mapped yet, and each batch commits.
    func checkMappedTablesAreNotReferred(by mappings: [EntityMapping], resumable: Bool = false) throws {
        let sources = mappings.map(\.source)
        for source in sources {
            let children = try foreignKeysReferring(to: source).map(\.child)
            guard let child = children.first(where: { child in !sources.contains { sameName($0, child) } }) else { continue }
            throw error(
                code: SQLITE_MISUSE,
                message: resumable
                    ? "a resumable schema migration cannot map the rows of table \(source): table \(child) refers to "
                        + "it, and between two batches \(child)'s rows would refer to rows not mapped yet. Map "
                        + "\(child) in the same migration, or register an ordinary migration with foreignKeyCheck: .deferred"
                    : "cannot map the rows of table \(source) while foreign keys are enforced: table "
                        + "\(child) refers to it, and replacing \(source) would repoint or delete \(child)'s "
                        + "references. Run this migration in a store with foreignKeyCheck: .deferred",
                sql: nil)
        }
    }

    /// Throws for the drops `policy` refuses of tables and columns that hold data.
    func checkDataLoss(_ drops: [SchemaDiff.Drop], policy: DataLossPolicy) throws {
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

    /// Applies `change`, calling `mapRows` with the source of a ``SchemaChange/mapRows(from:)``.
    func apply(_ change: SchemaChange, mapRows: (String) throws -> Void) throws {
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
        case let .mapRows(source):
            try mapRows(source)
        }
    }
}
