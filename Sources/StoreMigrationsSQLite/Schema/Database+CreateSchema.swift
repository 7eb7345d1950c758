import StoreMigrations

extension Database {
    /// Brings a database with none of a manager's history to `prepared`'s schema: its `CREATE`
    /// statements, run directly on a database that has no table, view, index or trigger of its
    /// own, in the caller's transaction; otherwise ``migrateSchema(to:dataLoss:mappings:)``,
    /// which keeps what the declaration keeps and refuses to drop data.
    func create(_ prepared: PreparedSchema) throws {
        guard try hasNoSchemaOfItsOwn() else {
            try migrateSchema(to: prepared.schema)
            return
        }
        let problems = prepared.problems
        guard problems.isEmpty else { throw SchemaMigrationError.invalidDeclaration(problems: problems, database: path) }
        try execute(prepared.statements)
    }

    /// Whether the database holds nothing but the store's record tables.
    private func hasNoSchemaOfItsOwn() throws -> Bool {
        try scalar(
            """
            SELECT count(*) FROM sqlite_master
            WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name NOT IN (?, ?) AND tbl_name NOT IN (?, ?)
            """,
            arguments: [
                .text(SQLiteStore.levelsTable), .text(SQLiteStore.historyTable),
                .text(SQLiteStore.levelsTable), .text(SQLiteStore.historyTable),
            ], as: Int.self) == 0
    }
}
