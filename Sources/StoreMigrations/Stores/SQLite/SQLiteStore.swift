#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import Foundation

/// A SQLite database migrated one transaction per step: the body's changes and the manager's
/// record (its level row and a history row) are committed together, or not at all.
///
/// ```swift
/// let library = try coordinator.manager("library", store: SQLiteStore(url: databaseURL))
/// library.register("1.1") { db in
///     try db.addColumn("guid", type: .text, to: "event")
///     try db.transformRows(in: "event", columns: ["guid"]) { _ in ["guid": .text(UUID().uuidString)] }
///     try db.createIndex("event_on_guid", on: "event", columns: ["guid"], unique: true)
/// }
/// ```
///
/// Each step runs as: `BEGIN IMMEDIATE`; read the records again (another process may have
/// applied the step: then nothing runs); the body; write the records that changed; check
/// foreign keys; `COMMIT`. If anything throws, the transaction is rolled back, so the data and
/// the records stay as they were, and the error is rethrown unchanged. The body cannot commit or
/// roll back the transaction itself (such statements fail with `SQLITE_AUTH`), but it may use
/// savepoints.
///
/// Unlike the file stores, this store takes no lock file: `BEGIN IMMEDIATE` already excludes
/// writers in other processes, the records are read again inside that transaction, SQLite's
/// locks die with their process, and a wait past ``busyTimeout`` ends with
/// ``SQLiteError/isBusy``. A `flock` beside the database would be a second lock with the same
/// effect.
///
/// Planning only reads: ``readRecords()`` creates no file, switches no journal mode and leaves
/// no `-wal` or `-shm` file behind. The first step opens the migrating connection, in WAL mode,
/// with foreign keys enforced and a busy timeout; a missing file (and its directory) is created,
/// empty. A file that is not a database is never written to: every call throws an
/// ``SQLiteError`` with ``SQLiteError/isNotADatabase``.
///
/// Records are kept in the table `store_migrations_levels(manager, level, app_version, baseline)`
/// and the applied set in `store_migrations_history(manager, version, applied_at,
/// duration_seconds)`, with `applied_at` in UTC as `YYYY-MM-DDTHH:MM:SS.SSSZ`. A levels table
/// written before records held sets (no `baseline` column) is read with each level as the
/// baseline mark, and given the column by the next step.
public final class SQLiteStore: MigrationStore, @unchecked Sendable {
    /// Migration bodies receive the store's connection.
    public typealias Content = Database

    /// When foreign keys are checked during a migration step.
    public enum ForeignKeyCheck: Sendable, Hashable {
        /// Foreign keys are not enforced while the body runs, and `PRAGMA foreign_key_check` checks
        /// the whole database before commit. This is SQLite's documented way to change a schema:
        /// tables can be rebuilt and rows moved in any order, and no `ON DELETE` or `ON UPDATE`
        /// action runs behind the body's back (delete dependent rows explicitly). The check reads
        /// every table that has a foreign key, whatever the step touched.
        case deferred
        /// Foreign keys are enforced, and their actions run, as each statement of the body runs,
        /// and there is no check of the whole database at the end: for databases whose tables
        /// are too large to scan on every step. Rows must be written in dependency order, and
        /// ``Database/rebuildTable(_:definition:options:copying:)`` refuses to rebuild a table
        /// that others refer to with an `ON DELETE` action.
        case immediate
    }

    /// The database file.
    public let url: URL
    /// How long a statement waits for another connection's lock before failing with
    /// ``SQLiteError/isBusy``.
    public let busyTimeout: TimeInterval
    /// When foreign keys are checked during a migration step.
    public let foreignKeyCheck: ForeignKeyCheck

    // The store is @unchecked Sendable because `connection`, a non-Sendable SQLite connection, is
    // only ever touched with `lock` held, so one thread at a time uses it. The lock is recursive
    // so that a body calling back into its store on the same thread gets an error rather than a
    // deadlock.
    private let lock = NSRecursiveLock()
    private var connection: Database?

    static let levelsTable = "store_migrations_levels"
    static let historyTable = "store_migrations_history"

    /// Creates a store for the database at `url`. Nothing is opened until the store is first used.
    ///
    /// - Parameters:
    ///   - url: The database file; created with its directory if missing.
    ///   - busyTimeout: How long to wait for a lock held by another connection or process.
    ///   - foreignKeyCheck: When foreign keys are checked during a migration step; see
    ///     ``ForeignKeyCheck`` for the trade-off.
    public init(url: URL, busyTimeout: TimeInterval = 5, foreignKeyCheck: ForeignKeyCheck = .deferred) {
        self.url = url
        self.busyTimeout = busyTimeout
        self.foreignKeyCheck = foreignKeyCheck
    }

    public var description: String { "SQLite database \(url.path)" }

    // MARK: MigrationStore

    /// The database file: two store objects for one file are one store to the scheduler.
    public var identity: StoreIdentity { .file(url) }

    /// Reads every manager's record from `store_migrations_levels` and `store_migrations_history`
    /// in one snapshot, changing nothing.
    ///
    /// A missing database has no records and stays missing. An existing one is read through a
    /// connection of its own that refuses writes and switches no journal mode, closed before
    /// returning, so that no `-wal` or `-shm` file stays behind (unless a step of this store
    /// has opened its migrating connection already, which is then used). A file that is not a
    /// database, a lock held past the busy timeout, or a record that does not parse throws.
    public func readRecords() throws -> [String: MigrationRecord] {
        lock.lock()
        defer { lock.unlock() }
        if let connection { return try reading(connection) { try records(in: connection) } }
        guard FileManager.default.fileExists(atPath: url.path) else { return [:] }
        let db: Database
        do {
            db = try Database(path: url.path, busyTimeout: busyTimeout, mode: .inspecting)
        } catch let error as SQLiteError where error.code == SQLITE_CANTOPEN || error.code == SQLITE_READONLY {
            db = try Database(path: url.path, busyTimeout: busyTimeout, mode: .readOnly)
        }
        return try reading(db) { try records(in: db) }
    }

    /// Runs `body` in one `IMMEDIATE` transaction with the records, then writes the records that
    /// changed, checks foreign keys and commits; see the type's discussion. The body's error, or
    /// the ``SQLiteError`` that stopped the step, is rethrown after the rollback.
    public func transaction<T>(_ body: (inout [String: MigrationRecord], inout Database) throws -> T) throws -> T {
        try withConnection { db in
            // SQLite ignores this pragma inside a transaction, hence before BEGIN (step 1 of the
            // documented schema-change procedure) and after the transaction ends (step 12).
            let disablesForeignKeys = foreignKeyCheck == .deferred
            if disablesForeignKeys { try db.setPragmaFlag("foreign_keys", false) }
            defer { if disablesForeignKeys { try? db.setPragmaFlag("foreign_keys", true) } }

            return try inWriteTransaction(db) {
                try upgradeStoreTables(db)
                let before = try records(in: db)
                var records = before
                // The body gets its own reference: reassigning it cannot swap the store's connection.
                var content = db
                let result = try db.denyingTransactionControl { try body(&records, &content) }
                // Never record anything outside the transaction that holds the body's changes.
                guard db.isInTransaction else {
                    throw db.error(
                        code: SQLITE_MISUSE,
                        message: "a migration body ended the store's transaction; nothing was recorded",
                        sql: nil)
                }
                guard records != before else { return result }
                try write(records, over: before, in: db)
                if disablesForeignKeys { try db.checkForeignKeys() }
                return result
            }
        }
    }

    // MARK: Reading

    /// Runs `body` with the database in a read-only transaction: to look at the data from an
    /// app, a test, or a first-launch decision.
    ///
    /// ```swift
    /// let hasLegacyData = try store.read { db in
    ///     try db.tableExists("event") && (try db.scalar("SELECT count(*) FROM event", as: Int.self) ?? 0) > 0
    /// }
    /// ```
    ///
    /// Writes fail with `SQLITE_READONLY`. The body sees one consistent snapshot, and waits for a
    /// migration step of this store in progress to finish first.
    public func read<T>(_ body: (Database) throws -> T) throws -> T {
        try withConnection { db in
            try reading(db) {
                let wasQueryOnly = try db.pragmaFlag("query_only")
                try db.setPragmaFlag("query_only", true)
                defer { if !wasQueryOnly { try? db.setPragmaFlag("query_only", false) } }
                return try db.denyingTransactionControl { try body(db) }
            }
        }
    }

    /// Runs `body` in one `IMMEDIATE` transaction outside any migration, committing when it
    /// returns and rolling back when it throws; levels are not touched. For an app's own writes
    /// that must not interleave with a migration step of this store, seeding a test database,
    /// or importing legacy data.
    ///
    /// ```swift
    /// try store.write { db in
    ///     try db.execute("INSERT INTO note(title) VALUES (?)", arguments: ["Welcome"])
    /// }
    /// ```
    public func write<T>(_ body: (Database) throws -> T) throws -> T {
        try withConnection { db in
            try inWriteTransaction(db, creatingStoreTables: false) {
                try db.denyingTransactionControl { try body(db) }
            }
        }
    }

    // MARK: Connection and transactions

    private func withConnection<T>(_ body: (Database) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        let db = try connection ?? openConnection()
        connection = db
        return try body(db)
    }

    private func openConnection() throws -> Database {
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        return try Database(path: url.path, busyTimeout: busyTimeout)
    }

    /// Runs `body` in a deferred transaction that is rolled back at the end, or in the
    /// transaction already open when the store is used from inside a migration body.
    private func reading<T>(_ db: Database, _ body: () throws -> T) throws -> T {
        if db.isInTransaction { return try body() }
        try db.execute("BEGIN DEFERRED")
        defer { if db.isInTransaction { try? db.execute("ROLLBACK") } }
        return try body()
    }

    /// Runs `body` in an IMMEDIATE transaction holding the store's tables, committing if it
    /// returns and rolling back if it or the commit throws.
    private func inWriteTransaction<T>(_ db: Database, creatingStoreTables: Bool = true, _ body: () throws -> T) throws -> T {
        guard !db.isInTransaction else {
            throw db.error(
                code: SQLITE_MISUSE,
                message: "the store cannot start a migration step or state update from inside a "
                    + "migration body or a read; return from the body first",
                sql: nil)
        }
        // IMMEDIATE takes the write lock now, so the level read below cannot go stale before commit.
        try db.execute("BEGIN IMMEDIATE")
        do {
            if creatingStoreTables { try createStoreTables(db) }
            let result = try body()
            if db.isInTransaction {
                try commit(db)
            }
            return result
        } catch {
            rollBack(db)
            throw error
        }
    }

    private func createStoreTables(_ db: Database) throws {
        try db.execute(
            """
            CREATE TABLE IF NOT EXISTS \(Self.levelsTable)(
                manager TEXT PRIMARY KEY NOT NULL, level TEXT, app_version TEXT, baseline TEXT);
            CREATE TABLE IF NOT EXISTS \(Self.historyTable)(
                id INTEGER PRIMARY KEY, manager TEXT NOT NULL, version TEXT NOT NULL,
                applied_at TEXT NOT NULL, duration_seconds REAL NOT NULL);
            """)
    }

    /// Gives a levels table written before records held sets its `baseline` column, each
    /// manager's level becoming its baseline mark (everything at or below it was applied).
    private func upgradeStoreTables(_ db: Database) throws {
        guard try !hasBaselineColumn(db) else { return }
        try db.execute(
            """
            ALTER TABLE \(Self.levelsTable) ADD COLUMN baseline TEXT;
            UPDATE \(Self.levelsTable) SET baseline = level;
            """)
    }

    private func hasBaselineColumn(_ db: Database) throws -> Bool {
        try db.scalar(
            "SELECT count(*) FROM pragma_table_info('\(Self.levelsTable)') WHERE name = 'baseline'", as: Int.self) == 1
    }

    /// Every manager's record: the levels table gives the baseline and app version, the history
    /// table the applied set. A table written before records held sets has no `baseline` column:
    /// its level is the baseline then. A level above what the rest gives (an older release
    /// migrated the store) raises the baseline to it.
    private func records(in db: Database) throws -> [String: MigrationRecord] {
        guard try db.tableExists(Self.levelsTable) else { return [:] }
        let baselineColumn = try hasBaselineColumn(db) ? "baseline" : "level"
        var records: [String: MigrationRecord] = [:]
        var levels: [String: Version] = [:]
        for row in try db.rows("SELECT manager, level, app_version, \(baselineColumn) FROM \(Self.levelsTable)") {
            let manager: String = try row[0]
            records[manager] = MigrationRecord(
                baseline: try version(row[3], column: "baseline", of: manager),
                appVersion: try version(row[2], column: "app_version", of: manager))
            levels[manager] = try version(row[1], column: "level", of: manager)
        }
        if try db.tableExists(Self.historyTable) {
            var applied: [String: [AppliedMigration]] = [:]
            for row in try db.rows(
                """
                SELECT manager, version, (julianday(applied_at) - 2440587.5) * 86400.0, duration_seconds
                FROM \(Self.historyTable) ORDER BY id
                """)
            {
                let manager: String = try row[0]
                guard let version = try version(row[1], column: "version in \(Self.historyTable)", of: manager) else { continue }
                let seconds: Double? = try row[2]
                applied[manager, default: []].append(AppliedMigration(
                    version: version, appliedAt: seconds.map(Date.init(timeIntervalSince1970:)), duration: try row[3]))
            }
            for (manager, migrations) in applied {
                let record = records[manager] ?? MigrationRecord()
                records[manager] = MigrationRecord(applied: migrations, baseline: record.baseline, appVersion: record.appVersion)
            }
        }
        for (manager, level) in levels where records[manager]?.level.map({ level > $0 }) ?? true {
            records[manager, default: MigrationRecord()].baseline = level
        }
        return records
    }

    /// Writes what changed between `old` and `new`: each changed manager's row of the levels
    /// table (its `level` too, which older releases read), and its history rows.
    private func write(_ new: [String: MigrationRecord], over old: [String: MigrationRecord], in db: Database) throws {
        for manager in old.keys where new[manager] == nil {
            try db.execute("DELETE FROM \(Self.levelsTable) WHERE manager = ?", arguments: [.text(manager)])
            try db.execute("DELETE FROM \(Self.historyTable) WHERE manager = ?", arguments: [.text(manager)])
        }
        for (manager, record) in new where old[manager] != record {
            try db.execute(
                """
                INSERT INTO \(Self.levelsTable)(manager, level, app_version, baseline) VALUES (?, ?, ?, ?)
                ON CONFLICT(manager) DO UPDATE SET
                    level = excluded.level, app_version = excluded.app_version, baseline = excluded.baseline
                """,
                arguments: [
                    .text(manager), DatabaseValue(record.level?.description),
                    DatabaseValue(record.appVersion?.description), DatabaseValue(record.baseline?.description),
                ])
            let previous = old[manager] ?? MigrationRecord()
            for migration in previous.applied where !record.appliedVersions.contains(migration.version) {
                try db.execute(
                    "DELETE FROM \(Self.historyTable) WHERE manager = ? AND version = ?",
                    arguments: [.text(manager), .text(migration.version.description)])
            }
            for migration in record.applied where !previous.appliedVersions.contains(migration.version) {
                try db.execute(
                    """
                    INSERT INTO \(Self.historyTable)(manager, version, applied_at, duration_seconds)
                    VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', ?, 'unixepoch'), ?)
                    """,
                    arguments: [
                        .text(manager), .text(migration.version.description),
                        .real((migration.appliedAt ?? Date()).timeIntervalSince1970), .real(migration.duration ?? 0),
                    ])
            }
        }
    }

    private func commit(_ db: Database) throws {
        do {
            try db.execute("COMMIT")
        } catch let error as SQLiteError where error.isForeignKeyViolation {
            // Violations of constraints declared DEFERRABLE INITIALLY DEFERRED surface only here,
            // without detail: list them.
            let violations = (try? db.foreignKeyViolations()) ?? []
            throw SQLiteError(
                extendedCode: error.extendedCode, message: error.message, sql: error.sql,
                path: error.path, foreignKeyViolations: violations)
        }
    }

    private func rollBack(_ db: Database) {
        guard db.isInTransaction else { return }
        try? db.execute("ROLLBACK")
        // A connection stuck in its transaction would fail every later step: closing it rolls
        // the transaction back, and the next use opens a fresh one.
        if db.isInTransaction { connection = nil }
    }

    private func version(_ value: DatabaseValue, column: String, of manager: String) throws -> Version? {
        guard case .text(let text) = value else {
            if case .null = value { return nil }
            throw MigrationError.unreadableState(
                manager: manager, store: description, reason: "its \(column) in table \(Self.levelsTable) is \(value), not text")
        }
        do {
            return try Version(parsing: text)
        } catch {
            throw MigrationError.unreadableState(
                manager: manager, store: description, reason: "its \(column) in table \(Self.levelsTable) is \(error)")
        }
    }
}
