import StoreMigrations

/// The schema a migration registered with a declared schema brings its database to, kept with
/// its options so that a creation from the declared schema finds it when the manager is frozen.
enum DeclaredSchemaOption: MigrationOption {
    struct Value: Sendable {
        let schema: DeclaredSchema
        /// `schema.description`: its `CREATE` statements, which the registration writes for the
        /// fingerprint and a creation runs, kept rather than written again for each.
        let statements: String
    }
}
