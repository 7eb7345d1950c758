import StoreMigrations

/// What a new database created from the declared schema
/// (``StoreMigrations/MigrationManager/createNewDatabasesFromSchema(historyData:)``) gets of the
/// data its history's migrations would have written: the rows they insert, update or delete do
/// not run on a database created from the schema, so say what it needs instead.
///
/// ```swift
/// library.createNewDatabasesFromSchema(historyData: .notNeeded)
/// library.createNewDatabasesFromSchema(historyData: .seed { db in
///     try db.execute("INSERT INTO category(name) VALUES ('Inbox')")
/// })
/// ```
public enum NewDatabaseData: Sendable {
    /// The history's data changes matter only to databases that already had rows: a new
    /// database starts with the declared schema's tables empty.
    case notNeeded
    /// Rows a new database needs, as the history's migrations would have left them (default
    /// categories, reference tables): the closure runs once the tables exist, in the creation's
    /// transaction, and writes only through the connection it is given. A new database is built
    /// aside and linked into place when created: of two processes creating it together, each runs
    /// the closure on its own file, and the one that links second throws its file away.
    case seed(@Sendable (Database) throws -> Void)
}
