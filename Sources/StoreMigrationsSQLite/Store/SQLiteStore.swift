#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import StoreMigrations

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
/// savepoints. Nor can it end the transaction another way (`INSERT OR ROLLBACK`, a trigger's
/// `RAISE(ROLLBACK)`, SQLite's own rollback after `SQLITE_FULL`, even caught with `try?`): the
/// statement that ends it, and every statement after it, throw ``SQLiteStoreError``, a commit
/// hook vetoes any commit while the body runs, and the step fails with that error, naming the
/// statement, with nothing of it on disk.
///
/// After every step, `write` and `read`, the connection's settings are compared with those it
/// was opened with (`query_only`, `locking_mode`, `busy_timeout`, `foreign_keys`,
/// `recursive_triggers`, the journal and synchronous modes, attached databases, temporary
/// triggers and more): a connection a body changed is
/// closed, and the next use opens a fresh one, so no step inherits a mode, a pragma or a lock.
///
/// Transactional steps take no lock file: `BEGIN IMMEDIATE` already excludes writers in other
/// processes, the records are read again inside that transaction, SQLite's locks die with their
/// process, and a wait past ``busyTimeout`` (30 s by default, like the file stores' lock
/// timeout) ends with ``SQLiteError/isBusy``. Steps registered with ``/StoreMigrations/TransactionMode/none``
/// take one; see ``transaction(_:_:)``.
///
/// Planning only reads: ``readRecords()`` creates no file, switches no journal mode and leaves
/// no `-wal` or `-shm` file behind. The first step opens the migrating connection, in WAL mode
/// unless the store keeps the database's journal mode (see ``JournalMode``), with foreign keys
/// enforced and a busy timeout; a missing file (and its directory) is created, empty, aside and
/// linked into place (a creation from the declared schema builds the whole database aside:
/// ``StoreMigrations/MigrationManager/createNewDatabasesFromSchema(historyData:)``). A 0-byte
/// file is refused with ``SQLiteStoreError/Reason/emptyDatabaseFile``. A file that is not a database is never
/// written to: every call throws an ``SQLiteError`` with ``SQLiteError/isNotADatabase``.
///
/// Records are kept in the table `store_migrations_levels(manager, level, app_version, baseline,
/// progress)` and the applied set in `store_migrations_history(id, manager, version, applied_at,
/// duration_seconds, name, fingerprint)`, with `applied_at` in UTC as `YYYY-MM-DDTHH:MM:SS.SSSZ`.
/// A levels table written before records held sets (no `baseline` column) is read with each level
/// as the baseline mark; tables of an earlier release are given the columns they lack by the next
/// step.
public final class SQLiteStore: MigrationStore, @unchecked Sendable {
    /// Migration bodies receive the store's connection.
    public typealias Content = Database

    /// When foreign keys are checked during a migration step.
    public enum ForeignKeyCheck: Sendable, Hashable {
        /// Foreign keys are not enforced while the body runs, and `PRAGMA foreign_key_check` checks
        /// the whole database before commit. This is SQLite's documented way to change a schema:
        /// tables can be rebuilt and rows moved in any order, and no `ON DELETE` or `ON UPDATE`
        /// action runs behind the body's back (delete dependent rows explicitly). The check reads
        /// every table that has a foreign key, whatever the step touched. Batches of a resumable
        /// migration, which change rows and not the schema, are checked ``immediate``ly instead.
        case deferred
        /// Foreign keys are enforced, and their actions run, as each statement of the body runs,
        /// and there is no check of the whole database at the end: for databases whose tables
        /// are too large to scan on every step. Rows must be written in dependency order, and
        /// ``Database/rebuildTable(_:definition:options:copying:)`` refuses to rebuild a table
        /// that others refer to with an `ON DELETE` action.
        case immediate
        /// Foreign keys are neither enforced while the body runs nor checked before commit: for
        /// a step that knowingly leaves rows a later step repairs, or imports data whose
        /// references are checked elsewhere. Rows that break a foreign key are committed as
        /// they are; ``Database/checkForeignKeys(in:)`` finds them later.
        case disabled
    }

    /// The journal mode a step leaves the database in.
    ///
    /// SQLite keeps WAL mode in the file: once a connection switches a database to it, every
    /// later connection, the app's own included, opens it in WAL mode, with `-wal` and `-shm`
    /// files beside it while one is open. Keep the database's mode when other code needs it
    /// otherwise, such as a tool that copies the database as a single file.
    public enum JournalMode: Sendable, Hashable {
        /// Switch the database to WAL, for good: readers then do not wait for a step's writes,
        /// nor a step for readers.
        case wal
        /// Leave the database in the journal mode it has; a database the store creates gets
        /// SQLite's default, a rollback journal (`DELETE`). Readers and a step's writes then wait
        /// for each other, up to ``SQLiteStore/busyTimeout``.
        case keep
    }

    /// The database file.
    public let url: URL
    /// `url.path`, kept: `URL` works it out again on every call, which a launch would pay often.
    private let path: String
    /// How long a statement waits for another connection's lock before failing with
    /// ``SQLiteError/isBusy``: 30 seconds unless told otherwise, as long as the file stores wait
    /// for their lock file, so that an app and its extension wait for each other's steps alike.
    public let busyTimeout: TimeInterval
    /// When foreign keys are checked during a migration step.
    public let foreignKeyCheck: ForeignKeyCheck
    /// Whether a step switches the database to WAL or keeps its journal mode.
    public let journalMode: JournalMode
    /// Whether the store may migrate and write, or only plan and read.
    public let access: Access
    /// Run on every connection the store opens for steps, writes and reads; see ``init(url:busyTimeout:foreignKeyCheck:journalMode:access:configure:)``.
    private let configure: (@Sendable (Database) throws -> Void)?

    // The store is @unchecked Sendable because `connection`, a non-Sendable SQLite connection, is
    // only ever touched with `lock` held, so one thread at a time uses it. The lock is recursive
    // so that a body calling back into its store on the same thread gets an error rather than a
    // deadlock.
    private let lock = NSRecursiveLock()
    private var connection: Database?
    /// The settings `connection` had when opened; see ``ConnectionSettings``.
    private var connectionSettings: ConnectionSettings?
    /// How many calls are using `connection` (a body may read its store again): settings are
    /// checked when the outermost returns.
    private var connectionUses = 0
    /// Set by ``close()`` called from a body: the connection is closed when the body's step ends.
    private var closesAfterUse = false
    /// Whether a body used `connection` since its settings were last read: they are read before
    /// its next use (see ``closeIfChanged(_:)``).
    private var settingsUnread = false

    static let levelsTable = "store_migrations_levels"
    static let historyTable = "store_migrations_history"
    /// The record tables, written as PostgreSQL's are, in SQLite's dialect.
    static let recordTables = SQLRecordTables(
        levels: levelsTable, history: historyTable,
        dialect: SQLRecordDialect(
            placeholder: { _ in "?" }, timestamp: { $0 },
            timestampArgument: { SQLiteTimestamp(secondsSince1970: $0).map { .text($0.text) } ?? .null }, historyKey: "INTEGER PRIMARY KEY", timestampType: "TEXT", realType: "REAL",
            columnNames: { "SELECT name FROM pragma_table_info('\($0)')" }, addsColumnsIfNotExists: false))

    /// Creates a store for the database at `url`. Nothing is opened until the store is first used.
    ///
    /// ```swift
    /// let store = SQLiteStore(url: databaseURL) { db in
    ///     try db.execute("PRAGMA synchronous = NORMAL")
    ///     try db.createFunction("normalized_title", argumentCount: 1) { arguments in
    ///         guard case let .text(title) = arguments[0] else { return .null }
    ///         return .text(title.lowercased())
    ///     }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - url: The database file; created with its directory if missing (a new database is
    ///     written aside and linked into place, so that no other process ever sees it empty), which
    ///     the plan and the report say (``/StoreMigrations/MigrationPlan/Manager/createsStore``): a
    ///     mistyped path shows there rather than as a quiet first launch. A folder that cannot be
    ///     created throws ``/StoreMigrations/FileStoreError``. An existing 0-byte file is refused
    ///     with ``SQLiteStoreError/Reason/emptyDatabaseFile``.
    ///   - busyTimeout: How long to wait for a lock held by another connection or process.
    ///   - foreignKeyCheck: When foreign keys are checked during a migration step; see
    ///     ``ForeignKeyCheck`` for the trade-off.
    ///   - journalMode: ``JournalMode/wal`` (the default) switches the database to WAL for good
    ///     at the first step; ``JournalMode/keep`` leaves it in its journal mode.
    ///   - access: ``Access/readOnly`` for a store that plans and reads but never migrates.
    ///   - configure: Run on every connection the store opens for steps, writes and reads, after
    ///     the store's own settings: custom SQL functions, collations, pragmas. What it sets is
    ///     what every step starts from (a step that changes it gets a fresh connection after).
    public init(
        url: URL, busyTimeout: TimeInterval = 30, foreignKeyCheck: ForeignKeyCheck = .deferred,
        journalMode: JournalMode = .wal, access: Access = .readWrite,
        configure: (@Sendable (Database) throws -> Void)? = nil
    ) {
        self.url = url
        path = url.path
        self.busyTimeout = busyTimeout
        self.foreignKeyCheck = foreignKeyCheck
        self.journalMode = journalMode
        self.access = access
        self.configure = configure
    }

    /// Closes the store's connection, releasing its file handles and locks; the next use of the
    /// store opens a new one. Called from a migration body, it closes the connection when the
    /// step ends.
    ///
    /// ```swift
    /// try coordinator.run()
    /// store.close()   // before moving or deleting the database file
    /// ```
    public func close() {
        lock.lock()
        defer { lock.unlock() }
        if connectionUses > 0 {
            closesAfterUse = true
        } else {
            connection = nil
            connectionSettings = nil
        }
    }

    public var description: String { "SQLite database \(path)" }

    // MARK: MigrationStore

    /// The database file: two store objects for one file are one store to the scheduler.
    public var identity: StoreIdentity { .file(url) }

    /// Whether the database file exists. When it does not, the plan and the report say that the
    /// first step creates it (see ``/StoreMigrations/MigrationPlan/Manager/createsStore``).
    public var exists: Bool {
        var status = stat()
        return stat(path, &status) == 0
    }

    /// Reads every manager's record from `store_migrations_levels` and `store_migrations_history`
    /// in one snapshot, changing nothing.
    ///
    /// A missing database has no records and stays missing. An existing one is read through a
    /// connection of its own that refuses writes and switches no journal mode, closed before
    /// returning, so that no `-wal` or `-shm` file stays behind (unless a step of this store
    /// has opened its migrating connection already, which is then used). When no `-wal` or
    /// `-journal` file is beside it, that connection reads the file as it is, under a shared
    /// lock, without creating either file: a fleet's check of thousands of tenant files is
    /// mostly this read. A file that is not a
    /// database, a lock held past the busy timeout, or a record that does not parse throws.
    public func readRecords() throws -> [String: MigrationRecord] {
        try readRecords(attachingTo: nil)
    }

    /// Reads the records as ``readRecords()`` does, but attaches the file to the connection
    /// `resources` keeps for the thread (``AttachedFileRead``) rather than opening one: a fleet's
    /// check of its tenants.
    package func readRecords(reusing resources: WorkerResources) throws -> [String: MigrationRecord] {
        try readRecords(attachingTo: try? resources.resource { try AttachedFileRead() })
    }

    /// A file in the records statement's current shape is read through `attached`, when given,
    /// else through a connection of its own; any other file the ordinary way.
    private func readRecords(attachingTo attached: AttachedFileRead?) throws -> [String: MigrationRecord] {
        lock.lock()
        defer { lock.unlock() }
        if let connection { return try records(in: connection) }
        // One stat for both questions a launch asks: is there a database, and is it 0 bytes
        // (data gone, not a new database: planning says so before any step)?
        var status = stat()
        guard stat(path, &status) == 0 else { return [:] }
        if status.st_size == 0, status.st_mode & S_IFMT == S_IFREG {
            throw SQLiteStoreError(.emptyDatabaseFile, store: description)
        }
        if let attached {
            if let records = attached.read(path: path, { try currentRecords(in: $0) }) { return records }
        } else if let records = UnchangedFileRead.read(path: path, busyTimeout: busyTimeout, { try records(in: $0) }) {
            return records
        }
        let db: Database
        do {
            db = try Database(path: path, busyTimeout: busyTimeout, mode: .inspecting)
        } catch let error as SQLiteError where error.code == SQLITE_CANTOPEN || error.code == SQLITE_READONLY {
            db = try Database(path: path, busyTimeout: busyTimeout, mode: .readOnly)
        }
        return try records(in: db)
    }

    /// A SQLite store runs steps registered with ``/StoreMigrations/TransactionMode/none``.
    public var runsStepsOutsideTransactions: Bool { true }

    /// Runs `body` in one `IMMEDIATE` transaction with the records, then writes the records that
    /// changed, checks foreign keys (as `request`'s migration was registered, or as the store
    /// says) and commits; see the type's discussion. The body's error, or the ``SQLiteError``
    /// that stopped the step, is rethrown after the rollback. A wait for another connection's
    /// write lock is reported to `request`.
    ///
    /// A request for ``/StoreMigrations/TransactionMode/none`` (`VACUUM`, say) runs `body`
    /// outside any transaction instead, holding a `flock` on the file
    /// `<database>.migration-lock` beside the database for the length of the step, then writes
    /// the records it changed in a transaction of their own:
    ///
    /// ```swift
    /// library.register("2.1", transaction: .none) { db in try db.execute("VACUUM") }
    /// ```
    ///
    /// Why a lock file: `BEGIN IMMEDIATE`, which excludes other processes' steps otherwise, cannot
    /// be held around `VACUUM`. The lock file makes two processes running the same `.none` step
    /// take turns (the second then finds it recorded and skips it). Transactional steps do not
    /// take it (they need no file beside the database, and `BEGIN IMMEDIATE` excludes them from
    /// each other): a transactional step of another process may therefore commit between two
    /// statements of a `.none` body, as the app's own writes may. Each statement of the body is
    /// its own transaction, and a crash before the records are written runs the body again: at
    /// least once. Foreign keys are enforced as each statement runs, whatever ``foreignKeyCheck``
    /// says. The body may run transactions of its own (SQLite runs `VACUUM` as one); one left open
    /// when it returns is rolled back and fails the step with ``SQLiteStoreError``.
    public func transaction<T>(
        _ request: TransactionRequest, _ body: (inout [String: MigrationRecord], inout Database) throws -> T
    ) throws -> T {
        if request.mode == .none { return try runOutsideTransaction(request, body) }
        if request.options[NewDatabaseBuiltWhole.self] == true, let created = try createdWhole(request, body) { return created }
        return try withConnection(request) { db in try step(request, in: db, body) }
    }

    /// The step of ``transaction(_:_:)`` in `db`, for a request that runs in a transaction.
    private func step<T>(
        _ request: TransactionRequest, in db: Database, _ body: (inout [String: MigrationRecord], inout Database) throws -> T
    ) throws -> T {
        // A batch of a resumable migration writes rows and never the schema: enforcing foreign
        // keys as its statements run is enough, where the deferred check would read every
        // table after every batch, costing a large table's batches far more than their work.
        let storeCheck = request.isBatch && foreignKeyCheck == .deferred ? .immediate : foreignKeyCheck
        let check = request.options[ForeignKeyCheckOption.self] ?? storeCheck
        // SQLite ignores this pragma inside a transaction, hence before BEGIN (step 1 of the
        // documented schema-change procedure) and after the transaction ends (step 12).
        let disablesForeignKeys = check != .immediate
        if disablesForeignKeys { try db.setPragmaFlag("foreign_keys", false) }
        defer { if disablesForeignKeys { try? db.setPragmaFlag("foreign_keys", true) } }
        let relaxedSync = request.isBatch ? try BatchCommitSync(relaxing: db) : nil
        var finishesStep = false
        defer { relaxedSync?.end(db, finishingStep: finishesStep) }

        return try inWriteTransaction(db) {
            let before = try recordsUpgradingTables(db)
            var records = before
            // The body gets its own reference: reassigning it cannot swap the store's connection.
            var content = db
            let result = try db.guardingTransaction(store: description, denyingSchemaChanges: request.isBatch) {
                try body(&records, &content)
            }
            // A body that made the connection read-only must not keep its own step from being
            // recorded; the connection is reopened after the step anyway (see `withConnection`).
            if try db.pragmaFlag("query_only") { try db.setPragmaFlag("query_only", false) }
            // Never record anything outside the transaction that holds the body's changes.
            guard db.isInTransaction else {
                throw db.error(
                    code: SQLITE_MISUSE,
                    message: "a migration body ended the store's transaction; nothing was recorded",
                    sql: nil)
            }
            guard records != before else { return result }
            try write(records, over: before, in: db)
            if check == .deferred { try db.checkForeignKeys() }
            if let migration = request.migration { finishesStep = records[migration.manager]?.isApplied(migration.version) == true }
            return result
        }
    }

    /// ``transaction(_:_:)`` for ``/StoreMigrations/TransactionMode/none``.
    private func runOutsideTransaction<T>(
        _ request: TransactionRequest, _ body: (inout [String: MigrationRecord], inout Database) throws -> T
    ) throws -> T {
        if access == .readOnly { throw SQLiteStoreError(.readOnly, store: description) }
        return try withConnection(request) { db in
            let held = try FileLock(
                url: URL(fileURLWithPath: path + ".migration-lock"), store: description,
                timeout: .milliseconds(Int((max(0, busyTimeout) * 1_000).rounded())), waiting: request)
            defer { held.unlock() }
            let before = try inWriteTransaction(db) { try recordsUpgradingTables(db) }
            var changed = before
            var content = db
            // No authorizer here: SQLite runs VACUUM as transaction statements of its own, which
            // it would refuse, and the body's own transactions protect nothing of the store's.
            let result = try body(&changed, &content)
            // A transaction the body left open is one the records must not join.
            guard !db.isInTransaction else {
                rollBack(db)
                throw SQLiteStoreError(
                    .transactionEnded(statement: "BEGIN or SAVEPOINT (left open when the body returned)", sqliteError: nil), store: description)
            }
            guard changed != before else { return result }
            try inWriteTransaction(db) { try write(changed, over: before, in: db) }
            return result
        }
    }

    // MARK: Reading

    /// Runs `body` with the database in a read-only transaction: to look at the data from an
    /// app, a test, or a first-launch decision.
    ///
    /// ```swift
    /// let hasLegacyData = try store.read { db in
    ///     guard try db.tableExists("event") else { return false }
    ///     return (try db.scalar("SELECT count(*) FROM event", as: Int.self) ?? 0) > 0
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
                try db.guardingTransaction(store: description) { try body(db) }
            }
        }
    }

    // MARK: Connection and transactions

    private func withConnection<T>(_ request: TransactionRequest? = nil, _ body: (Database) throws -> T) throws -> T {
        lockForUse(request)
        defer { lock.unlock() }
        if connectionUses == 0, settingsUnread, let kept = connection { closeIfSettingsChanged(kept) }
        let db = try connection ?? openConnection()
        connection = db
        connectionUses += 1
        defer {
            connectionUses -= 1
            if connectionUses == 0 { closeIfChanged(db) }
        }
        guard let request else { return try body(db) }
        return try db.busyWait.reportingWaits(to: {
            let holder = db.lockHolder
            request.waiting(StoreWait(
                store: description,
                lock: holder.isReader
                    ? "the readers' locks on \(url.lastPathComponent), to commit"
                    : "the database's write lock on \(url.lastPathComponent)",
                holderProcessID: holder.processID))
        }) { try body(db) }
    }

    /// Takes `lock`. Another thread of this process may be using the store (two coordinators on
    /// one store object): the scheduler keeps its own steps apart, so a wait is worth reporting.
    private func lockForUse(_ request: TransactionRequest?) {
        if lock.try() { return }
        request?.waiting(StoreWait(store: description, lock: "the store's connection, in use by another thread", holderProcessID: getpid()))
        lock.lock()
    }

    /// After the outermost use of `db`: closes it when ``close()`` was called meanwhile, when a
    /// transaction is still open, or when a body changed its locking mode, since an exclusive one
    /// keeps the database's lock past the use and only closing releases it. The other settings a
    /// body could change (``ConnectionSettings``) matter only to a later use, which reads them
    /// first (``closeIfSettingsChanged(_:)``): a store used once, by a launch's only step, no
    /// longer reads seventeen pragmas after it for nothing.
    private func closeIfChanged(_ db: Database) {
        guard connection === db else { return }
        db.installBusyHandler()
        if closesAfterUse || db.isInTransaction || ConnectionSettings.lockingMode(of: db) != connectionSettings?.lockingMode {
            closesAfterUse = false
            connection = nil
            connectionSettings = nil
        } else {
            settingsUnread = true
        }
    }

    /// Before the kept connection's next use: closes it when a body left a setting changed, so
    /// that the use opens a connection with the store's settings.
    private func closeIfSettingsChanged(_ db: Database) {
        settingsUnread = false
        if (try? ConnectionSettings(reading: db)) != connectionSettings {
            connection = nil
            connectionSettings = nil
        }
    }

    private func openConnection() throws -> Database {
        let db: Database
        if access == .readOnly {
            db = try openForReading()
        } else {
            try FileStoreError.createFolder(url.deletingLastPathComponent(), store: description)
            try createDatabaseIfMissing()
            db = try Database(path: path, busyTimeout: busyTimeout, mode: .migrating(switchingToWAL: journalMode == .wal))
        }
        try configure?(db)
        connectionSettings = try ConnectionSettings(reading: db)
        settingsUnread = false
        return db
    }

    /// A read-only store's connection: refusing writes (`query_only`), switching no journal mode,
    /// creating nothing.
    private func openForReading() throws -> Database {
        try refuseEmptyFile()
        do {
            return try Database(path: path, busyTimeout: busyTimeout, mode: .inspecting)
        } catch let error as SQLiteError where error.code == SQLITE_CANTOPEN || error.code == SQLITE_READONLY {
            return try Database(path: path, busyTimeout: busyTimeout, mode: .readOnly)
        }
    }

    /// Creates the database when there is no file at `url`: written aside, in the store's journal
    /// mode, and linked into place, so that another process never finds the store's path holding an empty file,
    /// which it refuses (SQLite itself creates the file empty and writes its first page later).
    /// An existing 0-byte file is refused.
    ///
    /// Refusing an empty file, rather than reporting it by the plan: the preferences store refuses
    /// one too, and the plan would need a diagnostic kind of its own for one store. An empty file
    /// is data lost (a truncated copy, a failed restore), and migrating it would record every
    /// level over nothing, hiding the loss for good; a refusal keeps the file as it is and says
    /// what to do.
    private func createDatabaseIfMissing() throws {
        if FileManager.default.fileExists(atPath: path) { return try refuseEmptyFile() }
        _ = try linkIntoPlace(builtAside: { aside in
            // Switching to WAL writes the first page; keeping the rollback journal writes nothing
            // by itself, so setting the header's user version does. The file is this process's
            // alone until linked, so that write needs no journal on disk: a rollback journal costs
            // three syncs of its own (the journal, its folder, the journal again) before the one
            // of the file, which is what the link must not overtake, and a kill leaves a file
            // only its creator's name points to. The in-memory journal is not kept in the file.
            let db = try Database(path: aside, busyTimeout: busyTimeout, mode: .migrating(switchingToWAL: false))
            try db.execute("PRAGMA journal_mode = MEMORY")
            try db.execute(journalMode == .wal ? "PRAGMA journal_mode = WAL" : "PRAGMA user_version = 0")
        })
    }

    /// Runs the step of `request`, which creates the database, on a new database built whole
    /// aside, then links that database into place; `nil`, with nothing changed, when the step is
    /// to run on the store's path as any other: the database exists, the store's connection is
    /// open, or the store is read-only. Also `nil` when another process linked a database into
    /// place first: the step then runs again on that one, reading the records again as any step
    /// does, so the caller's body must write only through the connection it is given (what it
    /// wrote aside is thrown away).
    ///
    /// Why: the step's transaction on the store's path in WAL mode writes each page twice, to
    /// the WAL and then, when the connection closes, into the database. Aside, the file is this
    /// process's alone until linked, so the transaction keeps its journal in memory (unless the
    /// store's `configure` sets another mode), as ``createDatabaseIfMissing()`` does, and each
    /// page is written once: committed and synced, then switched to the store's journal mode and
    /// closed before the link, which is the step's commit, synced with the folder. A kill before
    /// it leaves no database, as a rollback leaves none of the step.
    private func createdWhole<T>(
        _ request: TransactionRequest, _ body: (inout [String: MigrationRecord], inout Database) throws -> T
    ) throws -> T? {
        guard access == .readWrite else { return nil }
        lockForUse(request)
        defer { lock.unlock() }
        guard connection == nil, !exists else { return nil }
        try FileStoreError.createFolder(url.deletingLastPathComponent(), store: description)
        var result: T?
        let linked = try linkIntoPlace(builtAside: { aside in
            let db = try Database(path: aside, busyTimeout: busyTimeout, mode: .migrating(switchingToWAL: false), linkedPath: path)
            try db.execute("PRAGMA journal_mode = MEMORY")
            try configure?(db)
            // A body that uses its store again (a read) is given this connection, as it would be
            // the store's.
            connection = db
            connectionUses += 1
            defer {
                connectionUses -= 1
                connection = nil
                closesAfterUse = false
            }
            result = try step(request, in: db, body)
            if journalMode == .wal { try db.execute("PRAGMA journal_mode = WAL") }
        })
        guard linked else { return nil }
        // The link is the step's commit: it must outlast a power loss as a commit does.
        try FileStoreError.synchronizeFolder(url.deletingLastPathComponent().path, of: path, store: description)
        return result
    }

    /// Writes a new database with `build`, given a path aside that only this process writes, and
    /// links it into place: `false` when a database another process created meanwhile is there
    /// (`link`, unlike `rename`, never replaces it). `build` closes its connection before it
    /// returns; the files aside are removed whether or not it throws.
    private func linkIntoPlace(builtAside build: (_ aside: String) throws -> Void) throws -> Bool {
        let aside = newAsidePath()
        defer {
            for suffix in Self.creationSuffixes { unlink(aside + suffix) }
        }
        try build(aside)
        if link(aside, path) == 0 { return true }
        guard errno == EEXIST else {
            throw SQLiteError(
                extendedCode: SQLITE_CANTOPEN, message: "cannot create the database: \(String(cString: strerror(errno)))",
                sql: nil, path: path)
        }
        return false
    }

    /// A path for this process to write a new database at, beside the store's, whose name
    /// ``removeStaleCreations(in:)`` knows; first removes the files killed creations left.
    private func newAsidePath() -> String {
        let folder = url.deletingLastPathComponent()
        removeStaleCreations(in: folder)
        // The process ID and its namespace in the name tell a later creation whether the file's
        // creator still runs.
        return folder.appendingPathComponent(creationPrefix + "\(getpid())-\(Self.processNamespace).\(UUID().uuidString).creating").path
    }

    /// The PID namespace of this process (the inode of `/proc/self/ns/pid`), or `host` where
    /// there is none to read: process IDs named in creations' files mean something here only
    /// when the namespaces match.
    private static let processNamespace: String = {
        var status = stat()
        return stat("/proc/self/ns/pid", &status) == 0 ? String(status.st_ino) : "host"
    }()

    /// How the database's files being created aside begin: `.<name>.`, then the creator's process
    /// ID and PID namespace (`<pid>-<namespace>`), a UUID and `.creating`, then one of
    /// ``creationSuffixes``.
    private var creationPrefix: String { ".\(url.lastPathComponent)." }
    private static let creationSuffixes = ["", "-wal", "-shm", "-journal"]

    /// Removes the files of creations a killed process left in `folder` (nothing else removes
    /// them: they are not the database and never become it).
    ///
    /// Creation takes no lock (each process writes its own file and `link` picks one), so a file
    /// is known to be left over by its name's process ID: no such process runs in the namespace
    /// the name gives, this process's. The file of a process of another PID namespace sharing the
    /// folder (a container), or of a release that did not name the namespace, may still be
    /// written by a process whose ID means nothing here: it is removed once also a minute old,
    /// longer than a creation takes. A killed creation is removed by the next one, which a
    /// relaunch makes at once: the database was never linked into place. Failing to remove one
    /// changes nothing for this launch.
    private func removeStaleCreations(in folder: URL) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return }
        let prefix = creationPrefix
        for name in names where name.hasPrefix(prefix) {
            let rest = name.dropFirst(prefix.count)
            guard Self.creationSuffixes.contains(where: { rest.hasSuffix(".creating" + $0) }),
                  let creator = rest.split(separator: ".").first?.split(separator: "-", maxSplits: 1),
                  let pid = pid_t(creator[0]), pid > 0, kill(pid, 0) != 0, errno == ESRCH else { continue }
            let file = folder.appendingPathComponent(name).path
            if creator.count < 2 || creator[1] != Self.processNamespace {
                guard let modified = (try? FileManager.default.attributesOfItem(atPath: file))?[.modificationDate] as? Date,
                      modified.timeIntervalSinceNow < -60 else { continue }
            }
            unlink(file)
        }
    }

    /// Throws ``SQLiteStoreError/Reason/emptyDatabaseFile`` when the file at `url` holds 0 bytes.
    private func refuseEmptyFile() throws {
        // stat(2) rather than FileManager's attributes: planning calls it at every launch.
        var status = stat()
        if stat(path, &status) == 0, status.st_size == 0, status.st_mode & S_IFMT == S_IFREG {
            throw SQLiteStoreError(.emptyDatabaseFile, store: description)
        }
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
        if access == .readOnly { throw SQLiteStoreError(.readOnly, store: description) }
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
        try db.execute(Self.recordTables.createStatements.joined(separator: ";\n"))
    }

    /// The records, read in the caller's write transaction once the record tables have the
    /// columns this release writes. The records statement of this release compiles on nearly
    /// every step's tables (all but those of the first step after the library is upgraded), so
    /// only tables it does not compile on are asked which columns they lack: asking is a
    /// statement over two table-valued pragmas, which every step compiled when it was asked first.
    private func recordsUpgradingTables(_ db: Database) throws -> [String: MigrationRecord] {
        if let records = try currentRecords(in: db) { return records }
        try upgradeStoreTables(db)
        return try records(in: db)
    }

    /// Gives record tables written by an earlier release the columns this one writes
    /// (``SQLRecordTables/upgradeStatements(present:)``).
    private func upgradeStoreTables(_ db: Database) throws {
        let statements = Self.recordTables.upgradeStatements(present: try storeColumns(db))
        if !statements.isEmpty { try db.execute(statements.joined(separator: ";\n")) }
    }

    /// Which of the columns later releases added the record tables have, in one statement.
    private func storeColumns(_ db: Database) throws -> Set<SQLRecordTables.LaterColumn> {
        var present: Set<SQLRecordTables.LaterColumn> = []
        try db.forEachRow(Self.recordTables.presentColumnsQuery) { row in
            if let column = SQLRecordTables.LaterColumn(rawValue: try row[0]) { present.insert(column) }
        }
        return present
    }

    /// Every manager's record: the levels table gives the level, baseline and app version, the
    /// history table the applied set; ``MigrationRecord/init(decoding:)`` says what they mean. A
    /// table written before records held sets has no `baseline` column: its level is read there.
    ///
    /// Both tables are read by one statement, which sees one snapshot without a transaction
    /// around it: `BEGIN` and `ROLLBACK` are statements to compile and run too. It is compiled
    /// straight away, without first asking whether the tables and the `baseline` column exist:
    /// each question is a statement of its own to compile (the column's a table-valued pragma),
    /// which cost a launch more than reading the records. Only when it does not compile are they
    /// asked, in one transaction with the read, and they decide as before: no levels table, no
    /// records; no history table, no applied sets; no `baseline` column, the level instead.
    private func records(in db: Database) throws -> [String: MigrationRecord] {
        if let records = try currentRecords(in: db) { return records }
        return try reading(db) {
            guard try db.tableExists(Self.levelsTable) else { return [:] }
            let columns = try storeColumns(db)
            let sql = Self.recordsQuery(
                baselineColumn: columns.contains(.baseline) ? "baseline" : "level",
                progressColumn: columns.contains(.progress) ? "progress" : "NULL",
                history: try db.tableExists(Self.historyTable), labels: columns.contains(.fingerprint))
            return try records(from: RecordQuery.compiling(sql, in: db), in: db)
        }
    }

    /// The records, when the statement for the tables as this release writes them compiles;
    /// `nil` when it does not. The only read of a file attached to a connection of another
    /// database, where the questions asked of older tables would be asked of that database.
    private func currentRecords(in db: Database) throws -> [String: MigrationRecord]? {
        guard let query = RecordQuery.compiled(Self.currentRecordsQuery, in: db) else { return nil }
        return try records(from: query, in: db)
    }

    /// The history rows, then the levels rows, in seven columns: `manager`, `version` or `level`,
    /// `applied_at` or `app_version`, `duration_seconds` or the baseline, `id` (`NULL` in a
    /// levels row), the history row's `fingerprint` or the levels row's `progress`, and the
    /// history row's `name` (`NULL` in a levels row). A history table of a release before names
    /// and fingerprints gives `NULL` for both. (A column a row kind leaves empty holds the other
    /// kind's value where it can: each column of the statement costs every launch.) History comes first so that the
    /// columns are named after it, as the errors of ``RecordQuery/Cursor`` name them: of a levels
    /// row, only `manager` is read that way.
    ///
    /// No `ORDER BY`: ordering a compound statement sorts it in a temporary b-tree, which cost
    /// a launch almost as much as compiling the statement (Benchmarks/BENCHMARKS.md). A table is scanned in
    /// `id` order anyway; `records(from:in:)` orders what arrives otherwise (an index covering
    /// the columns, `PRAGMA reverse_unordered_selects`).
    ///
    /// The history's columns are read as `+column AS column`: the same values and names, but no
    /// table column behind them, so that compiling the statement does not look up and copy each
    /// column's declared type, table and origin (the system SQLite keeps them for every column of
    /// a result). A compound statement takes them from its first `SELECT` only.
    private static func recordsQuery(baselineColumn: String, progressColumn: String, history: Bool, labels: Bool) -> String {
        let levels = "SELECT manager, level, app_version, \(baselineColumn), NULL, \(progressColumn), NULL FROM \(levelsTable)"
        guard history else { return levels }
        return "SELECT +manager AS manager, +version AS version, +applied_at AS applied_at, "
            + "+duration_seconds AS duration_seconds, +id AS id, "
            + "\(labels ? "+fingerprint AS fingerprint, +name AS name" : "NULL, NULL") FROM \(historyTable) UNION ALL " + levels
    }

    /// The statement for both tables as this release writes them, built once rather than on
    /// every launch.
    private static let currentRecordsQuery = recordsQuery(
        baselineColumn: "baseline", progressColumn: "progress", history: true, labels: true)

    /// The records `query` (a ``recordsQuery(baselineColumn:progressColumn:history:labels:)``)
    /// reads, handed row by row to the reader both SQL stores share. A history row's manager is
    /// compared in place with the run's: making a string of every row's was a measurable part of
    /// a launch.
    private func records(from query: RecordQuery, in db: Database) throws -> [String: MigrationRecord] {
        var reader = SQLRecordReader(levelsTable: Self.levelsTable, historyTable: Self.historyTable, store: description)
        var appliedAt = AppliedAtReader(database: db)
        while let row = try query.nextRow() {
            guard let id = row.integer(4) else {
                try reader.levels(
                    manager: try row[0], level: Self.text(row.value(1)), appVersion: Self.text(row.value(2)),
                    baseline: Self.text(row.value(3)), progress: Self.text(row.value(5)))
                continue
            }
            let manager: String
            if let current = reader.historyManager, row.text(0, equals: current) { manager = current } else { manager = try row[0] }
            try reader.history(
                of: manager, id: id, version: Self.text(row.value(1)), appliedAt: try appliedAt.unixTime(ofColumn: 2, in: row),
                duration: try row[3], name: Self.optionalText(row, 6), fingerprint: Self.optionalText(row, 5))
        }
        return reader.records()
    }

    private static func text(_ value: DatabaseValue) -> SQLRecordText {
        switch value {
        case .null: return .null
        case .text(let text): return .text(text)
        default: return .other("\(value)")
        }
    }

    /// The text in `column` of `row`, `nil` for anything else: only the history's name and
    /// fingerprint are read this way, and a value that is not text is not one.
    private static func optionalText(_ row: RecordQuery.Cursor, _ column: Int32) -> String? {
        row.text(column).map { String(decoding: $0, as: UTF8.self) }
    }

    private func write(_ new: [String: MigrationRecord], over old: [String: MigrationRecord], in db: Database) throws {
        try Self.recordTables.write(new, over: old, through: RecordStatementCache(db))
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
        if db.isInTransaction {
            connection = nil
        }
    }
}

/// A fleet's check attaches each tenant's file to a connection its thread keeps:
/// ``SQLiteStore/readRecords(reusing:)``.
extension SQLiteStore: ReadReusingStore {}

extension SQLiteStore: ErasableStore {
    /// Empties the database in place, in one `IMMEDIATE` transaction: the record tables first,
    /// then every trigger, view, table and index, and `user_version` back to 0. A crash leaves
    /// the database as it was or empty, never content without records.
    ///
    /// The file is kept, with its journal mode, rather than deleted with its `-wal` and `-shm`
    /// files: a connection the app still holds open would go on writing to a deleted file, where
    /// here it sees the empty schema at its next statement.
    public func erase(_ request: TransactionRequest) throws {
        try withConnection(request) { db in
            // A dropped table would otherwise delete, or refuse to lose, the rows others refer to;
            // SQLite ignores the pragma inside a transaction, hence around it.
            try db.setPragmaFlag("foreign_keys", false)
            defer { try? db.setPragmaFlag("foreign_keys", true) }
            try inWriteTransaction(db, creatingStoreTables: false) {
                var statements = [Self.levelsTable, Self.historyTable].map { "DROP TABLE IF EXISTS \(Database.quoted($0))" }
                // Triggers and views before the tables they name, a virtual table before its
                // shadow tables; an index goes with its table (IF EXISTS: already gone).
                let objects = try db.rows("""
                    SELECT type, name FROM sqlite_master
                    WHERE type IN ('trigger', 'view', 'table', 'index') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
                    ORDER BY CASE WHEN type = 'trigger' THEN 0 WHEN type = 'view' THEN 1
                        WHEN sql LIKE 'CREATE VIRTUAL%' THEN 2 WHEN type = 'table' THEN 3 ELSE 4 END
                    """)
                for object in objects {
                    let type: String = try object["type"]
                    let name: String = try object["name"]
                    statements.append("DROP \(type.uppercased()) IF EXISTS \(Database.quoted(name))")
                }
                statements.append("PRAGMA user_version = 0")
                try db.execute(statements.joined(separator: ";\n"))
            }
        }
    }
}
