import StoreMigrations

/// The settings of a connection a migration body could change and leave behind for every later
/// step, write and read of the store: read once when the store opens its connection, and again
/// before each use that follows another (the locking mode right after each use); when they
/// differ, the store closes the connection and opens a fresh one for the use.
///
/// Reopening rather than setting each pragma back: a fresh connection has exactly the store's
/// settings, including those no pragma reads back, and closing it is the only way to release the
/// lock that `locking_mode = EXCLUSIVE` keeps after the step. It costs one open, only after a body
/// changed a setting.
struct ConnectionSettings: Equatable {
    /// Every value the statements below return, in their order.
    let values: [DatabaseValue]

    /// The pragmas read. Each is compiled afresh for each read, as the table-valued form of a
    /// pragma (`pragma_journal_mode`) compiles it when its cursor opens: several of them put the
    /// value into the compiled statement, so a statement kept from an earlier read could answer
    /// with the old value. The plain statements, without the table-valued form's virtual tables
    /// and the join of seventeen of them, cost a fraction of a query over them, on every first
    /// launch.
    private static let pragmas = [
        "query_only", "locking_mode", "busy_timeout", "foreign_keys", "recursive_triggers", "journal_mode", "synchronous",
        "defer_foreign_keys", "ignore_check_constraints", "trusted_schema", "reverse_unordered_selects", "automatic_index",
        "temp_store", "cell_size_check", "cache_size",
    ].map { "PRAGMA \($0)" }

    /// The value of `PRAGMA locking_mode` among ``values``.
    var lockingMode: DatabaseValue { values[Self.lockingModePosition] }

    private static let lockingModePosition = pragmas.firstIndex(of: "PRAGMA locking_mode")!

    /// `db`'s locking mode now, `nil` if it cannot be read.
    static func lockingMode(of db: Database) -> DatabaseValue? {
        try? db.row("PRAGMA locking_mode")?.values.first
    }

    /// The settings `db` has now: the pragmas' values, then how many databases are attached
    /// and how many objects the temporary schema holds (a body's `CREATE TEMP TRIGGER` would fire
    /// in later steps).
    init(reading db: Database) throws {
        var values: [DatabaseValue] = []
        values.reserveCapacity(Self.pragmas.count + 2)
        for pragma in Self.pragmas {
            try db.forEachRow(pragma) { values.append(contentsOf: $0.values) }
        }
        // The temporary schema first: reading it opens the temporary database, which the list
        // of databases then shows, on every read alike.
        let temporaryObjects = try db.row("SELECT count(*) FROM temp.sqlite_master")?.values.first ?? .null
        var databases = 0
        try db.forEachRow("PRAGMA database_list") { _ in databases += 1 }
        values.append(.integer(Int64(databases)))
        values.append(temporaryObjects)
        self.values = values
    }
}
