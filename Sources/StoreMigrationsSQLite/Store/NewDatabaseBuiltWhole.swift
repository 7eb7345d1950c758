import StoreMigrations

/// Set on a step whose body writes only through the connection it is given (a creation from the
/// declared schema): when it creates the database, the store may build the database whole aside
/// and link it into place (``SQLiteStore``'s `createdWhole`), where a body with other effects
/// could see them thrown away or run twice.
enum NewDatabaseBuiltWhole: MigrationOption {
    typealias Value = Bool
}
