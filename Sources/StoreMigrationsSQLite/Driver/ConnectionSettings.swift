import StoreMigrations

/// The settings of a connection a migration body could change and leave behind for every later
/// step, write and read of the store: read once when the store opens its connection, and again
/// after each use; when they differ, the store closes the connection and opens a fresh one for
/// the next use.
///
/// Reopening rather than setting each pragma back: a fresh connection has exactly the store's
/// settings, including those no pragma reads back, and closing it is the only way to release the
/// lock that `locking_mode = EXCLUSIVE` keeps after the step. It costs one open, only after a body
/// changed a setting; checking costs one run of a statement compiled once per connection.
struct ConnectionSettings: Equatable {
    /// Every value the query below returns, in its order.
    let values: [DatabaseValue]

    /// One statement reading them all: the table-valued form of each pragma, the attached
    /// databases and the temporary schema (a body's `CREATE TEMP TRIGGER` would fire in later
    /// steps).
    private static let query = """
        SELECT * FROM pragma_query_only, pragma_locking_mode, pragma_busy_timeout, pragma_foreign_keys,
            pragma_recursive_triggers, pragma_journal_mode, pragma_synchronous, pragma_defer_foreign_keys,
            pragma_ignore_check_constraints, pragma_trusted_schema, pragma_reverse_unordered_selects,
            pragma_automatic_index, pragma_temp_store, pragma_cell_size_check, pragma_cache_size,
            (SELECT count(*) FROM pragma_database_list), (SELECT count(*) FROM temp.sqlite_master)
        """

    /// The statement reading them on `db`, compiled once per connection by its store.
    static func query(on db: Database) throws -> Statement {
        try db.prepare(query)
    }

    /// The settings the connection of `query` (from ``query(on:)``) has now.
    init(reading query: Statement) throws {
        try query.bind([])
        defer { query.reset() }
        values = try query.step()?.values ?? []
    }
}
