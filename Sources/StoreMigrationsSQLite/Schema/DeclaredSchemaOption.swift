import StoreMigrations

/// The schema a migration registered with a declared schema brings its database to, kept with
/// its options so that a creation from the declared schema finds it when the manager is frozen.
enum DeclaredSchemaOption: MigrationOption {
    typealias Value = PreparedSchema
}
