import StoreMigrations

extension MigrationManager where Store == SQLiteStore {
    /// Creates each new database directly from the declared schema the manager's history ends in,
    /// and records every migration of the history applied, instead of replaying them: a squash
    /// of the whole history (``/StoreMigrations/MigrationManager/squash(from:through:dependsOn:options:_:)-(_,_,_,_,Body)``)
    /// whose body creates the last migration's schema.
    ///
    /// ```swift
    /// library.register("1.0", sql: "CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT)")
    /// library.register("1.1", sql: "INSERT INTO note(title) VALUES ('Welcome')")
    /// library.register("2.0", schema: notesV2)
    /// library.createNewDatabasesFromSchema(historyData: .seed { db in
    ///     try db.execute("INSERT INTO note(title) VALUES ('Welcome')")
    /// })
    /// ```
    ///
    /// The history's bodies do not run on a new database, so the rows they write do not either:
    /// `historyData` says what a new database needs of them (``NewDatabaseData``). Each store
    /// takes the path a squash gives it, which the plan shows (`library:squash@2.0`):
    /// - with none of the history applied (a new database, or one that only other managers
    ///   use), the declared schema's tables and indexes are created and `historyData` runs, and
    ///   every migration of the history is recorded applied with its own name and fingerprint, in
    ///   one transaction (a kill leaves nothing or all of it). On a database with no table of its
    ///   own the `CREATE` statements run directly; otherwise the schema is reached as
    ///   ``Database/migrateSchema(to:dataLoss:mappings:)`` reaches it;
    /// - part-way through the history, the remaining migrations run as usual;
    /// - with the history applied, nothing runs.
    ///
    /// A creation that makes the database file builds the database whole beside its path, its
    /// journal in memory, and links it into place once committed: each page is written once,
    /// where a transaction in WAL mode writes it to the WAL and again into the database. The path
    /// holds nothing until then, so a kill or a failure leaves no database. Of two processes
    /// creating it together, the one that links first wins; the other's creation runs again on
    /// that database and finds itself applied. `historyData`'s seed must therefore write only
    /// through the connection it is given.
    ///
    /// The history is whatever is registered when the coordinator plans: the migrations from the
    /// first through the last, which must be registered with a declared schema
    /// (``register(_:dependsOn:options:schema:dataLoss:mappings:)``),
    /// and none of them post-deploy or resumable; ``SchemaCreationError`` otherwise, before
    /// anything runs.
    ///
    /// - Parameter historyData: What a new database gets instead of the data the history's
    ///   migrations write: nothing (``NewDatabaseData/notNeeded``) or rows of its own
    ///   (``NewDatabaseData/seed(_:)``).
    public func createNewDatabasesFromSchema(historyData: NewDatabaseData) {
        squashHistory(options: MigrationOptions.named("created from the declared schema").setting(NewDatabaseBuiltWhole.self, true)) { history in
            let declared = try history.declaredSchema()
            return { db, _ in
                try db.create(declared)
                if case .seed(let seed) = historyData { try seed(db) }
            }
        }
    }
}

extension SquashedHistory {
    /// The schema the history ends in, or the error that says why a creation cannot replace it.
    func declaredSchema() throws -> PreparedSchema {
        for position in versions.indices {
            if isPostDeploy(position) {
                throw SchemaCreationError.replacesPostDeployMigration(manager: manager, store: store, migration: versions[position])
            }
            if resumable[position] {
                throw SchemaCreationError.replacesResumableMigration(manager: manager, store: store, migration: versions[position])
            }
        }
        guard let last = versions.indices.last, let schema = options[last][DeclaredSchemaOption.self] else {
            throw SchemaCreationError.lastMigrationNotDeclared(manager: manager, store: store, migration: versions[versions.count - 1])
        }
        return schema
    }
}
