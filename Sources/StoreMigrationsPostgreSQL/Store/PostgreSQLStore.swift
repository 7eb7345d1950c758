import CLibPQ
import Foundation
import StoreMigrations

/// A PostgreSQL database (one schema of it) migrated by the replicas of a service that share
/// it: every step runs exactly once, in one transaction with its record, whichever replica gets
/// to it first; the others wait, then find it applied.
///
/// ```swift
/// let store = try PostgreSQLStore("host=db.internal dbname=orders user=orders_service")
/// let orders = try coordinator.manager("orders", store: store)
/// orders.register("1.1") { db in
///     try db.execute("ALTER TABLE orders ADD COLUMN currency char(3) NOT NULL DEFAULT 'EUR'")
/// }
/// orders.register("1.2", transaction: .none) { db in
///     try db.execute("CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_by_currency ON orders(currency)")
/// }
/// let report = try coordinator.run()   // in every replica, at startup
/// ```
///
/// ## A step
///
/// `BEGIN`; take the store's transaction-level advisory lock; read the records again (after the
/// lock: a replica that held it before may have applied the step, and the step is then skipped
/// and reported as applied by another process); the body, on the same connection and in the
/// same transaction; write the manager's level row and history row; `COMMIT`. PostgreSQL's DDL
/// is transactional, so the body's data, its schema changes and the record commit together or
/// not at all; a body that throws, a statement that fails, a lost connection or a killed replica
/// leave the database as it was before the step.
///
/// ## The lock
///
/// The key is a 64-bit FNV-1a hash of `store_migrations:<schema>.store_migrations_levels` read
/// as a signed `bigint` (``lockKey``): every replica computes the same one, other schemas get
/// others. Replicas never wait inside the server: they poll `pg_try_advisory_xact_lock(key)` in
/// a fresh, short transaction (1 ms doubling to 25 ms between tries), and the transaction that
/// wins the lock becomes the step's. So a waiting replica holds neither a snapshot nor an open
/// transaction while it waits, and a `CREATE INDEX CONCURRENTLY` run by the lock holder (which
/// waits for every transaction with an older snapshot to end) never deadlocks against the
/// waiters (the trap of Flyway issue 1654). Waiting longer than ``lockTimeout`` throws
/// ``PostgreSQLError`` ``PostgreSQLError/Kind-swift.enum/lockTimeout(holderPID:)`` naming the
/// holder's server process id from `pg_locks`.
///
/// ## Table locks
///
/// A step's statements wait for table locks at most a short time (``lockRetries``, 2 s by
/// default): an `ALTER TABLE` behind a long query gives up its place in the table's lock queue
/// rather than stalling every query after it, and the step is tried again with backoff; see
/// ``LockRetries``. Row locks are waited for as long as they are held, in the same attempt. A
/// migration registered with ``LockRetries/off`` waits for every lock as long as it takes.
///
/// ## Non-transactional steps
///
/// A migration registered with ``/StoreMigrations/TransactionMode/none`` (for `CREATE INDEX CONCURRENTLY`,
/// `VACUUM`, `ALTER TYPE … ADD VALUE` before PostgreSQL 12) runs outside any transaction under
/// the same key taken at session level (`pg_try_advisory_lock`, polled the same way; released
/// with `pg_advisory_unlock`, or by the server when the session ends). Its record is written in
/// a short transaction after the body: if the replica dies in between, the next run runs the
/// body again: **at least once**. Write such bodies to be repeatable (`IF NOT EXISTS`; an
/// interrupted `CREATE INDEX CONCURRENTLY` leaves an invalid index to drop first).
///
/// ## Replicas that die
///
/// Advisory locks belong to the server session: when a replica dies (killed, crashed, its host
/// gone), the server rolls its transaction back and releases its locks as soon as it notices the
/// connection closed, and the next replica's poll wins. How soon it notices:
/// - a replica process killed on a live host (`SIGKILL`, a crash, an OOM kill): its kernel
///   closes the socket at once. Between statements the server notices at once; during a long
///   statement, within ``livenessCheckInterval`` (1 s by default: the session's
///   `client_connection_check_interval`, PostgreSQL 14 and later; before 14, only when the
///   statement ends).
/// - a host that vanishes or a network cut over TCP: the server's TCP keepalives probe an idle
///   connection after 10 s, every 5 s, 3 times (`tcp_keepalives_idle`, `_interval`, `_count`,
///   set for the session), and unacknowledged sends fail after 10 s (`tcp_user_timeout`): the
///   locks are released within about 25 s (+ ``livenessCheckInterval`` during a statement).
/// These session settings travel in the connection's startup packet (libpq's `options`, added
/// to any the connection string gives), so they cost no round trip; the test suite kills a
/// replica in the middle of a 60-second statement and sees its lock gone within 2.5 s. The
/// client side uses libpq's keepalives likewise (`keepalives_idle=10`, …) and a
/// `connect_timeout` of 10 s, unless the connection string sets them.
///
/// ## Records and planning
///
/// Records live in the store's schema (``schema``, `public` by default), in
/// `store_migrations_levels(manager text primary key, level text, app_version text, baseline text,
/// progress text)` and `store_migrations_history(id bigserial, manager text, version text,
/// applied_at timestamptz, duration_seconds double precision, name text, fingerprint text)`,
/// created by the first step; tables of an earlier release are given the columns it lacked. Each
/// step reads the records again in its transaction, under the advisory lock, so a history edited
/// by hand is seen by the next step. ``readRecords()`` (planning) only
/// reads: it creates no table or schema and takes no lock; a database that does not exist or a
/// server that cannot be reached is a ``PostgreSQLError`` with
/// ``PostgreSQLError/Kind-swift.enum/connectionFailed``, never a first launch. A table of that
/// name with other columns is never written to: ``PostgreSQLError/Kind-swift.enum/foreignStoreTable(table:)``.
public final class PostgreSQLStore: MigrationStore, @unchecked Sendable {
    /// Migration bodies receive the store's connection.
    public typealias Content = PostgreSQLConnection

    /// The schema the store's record tables live in.
    public let schema: String
    /// How long a step waits for another replica's step to finish before failing with
    /// ``PostgreSQLError/Kind-swift.enum/lockTimeout(holderPID:)``.
    public let lockTimeout: Duration
    /// The session's `statement_timeout` for migration statements, or `nil` for the server's.
    public let statementTimeout: Duration?
    /// How a step's statements wait for table locks, unless the migration was registered with
    /// its own (``StoreMigrations/MigrationManager/register(_:dependsOn:lockRetries:_:)-(_,_,_,Body)``).
    public let lockRetries: LockRetries
    /// How often the server checks, during a long statement, that the replica is still
    /// connected (`client_connection_check_interval`, PostgreSQL 14+).
    public let livenessCheckInterval: Duration
    /// The advisory lock key of the store; see the type's discussion.
    public var lockKey: Int64 { advisoryLock.key }

    /// libpq's keyword/value pairs, the given ones and the store's defaults.
    let parameters: [(String, String)]
    private let advisoryLock: AdvisoryLock
    private let name: String
    private let identityValue: String

    // The store is @unchecked Sendable because `connection`, a libpq connection that one thread
    // may use at a time, is only read or written with `lock` held; the lock is recursive so that
    // a body calling back into its store on the same thread gets an error rather than a deadlock.
    private let lock = NSRecursiveLock()
    private var connection: PostgreSQLConnection?
    /// Where the store borrows its connection for each call, when a fleet's tenants share a
    /// pool; set once, by ``init(_:schema:sharing:lockTimeout:lockRetries:)``, before any use.
    private var sharedConnections: (any SharedConnections)?
    /// How deep the calls into the store on the thread holding `lock` are: a borrowed
    /// connection goes back when the outermost ends.
    private var depth = 0

    static let levelsTable = "store_migrations_levels"
    static let historyTable = "store_migrations_history"

    /// Creates a store from a libpq connection string, `key=value` pairs or a URI. Nothing is
    /// opened until the store is first used.
    ///
    /// ```swift
    /// let store = try PostgreSQLStore("postgresql://service@db.internal/orders", schema: "orders")
    /// ```
    ///
    /// - Parameters:
    ///   - connectionString: As `psql` takes it; environment variables (`PGHOST`, `PGPASSWORD`,
    ///     …) fill in what it leaves out.
    ///   - schema: The schema of the store's record tables, created by the first step if missing.
    ///   - lockTimeout: How long a step waits for another replica's step.
    ///   - statementTimeout: `statement_timeout` for migration statements; `nil` keeps the server's.
    ///   - livenessCheckInterval: `client_connection_check_interval` for the store's sessions.
    ///   - lockRetries: How a step's statements wait for table locks; see ``LockRetries``.
    /// - Throws: ``PostgreSQLError`` with ``PostgreSQLError/Kind-swift.enum/invalidConnectionString``
    ///   when the string does not parse.
    public init(
        _ connectionString: String, schema: String = "public", lockTimeout: Duration = .seconds(120),
        statementTimeout: Duration? = nil, livenessCheckInterval: Duration = .seconds(1),
        lockRetries: LockRetries = .standard
    ) throws {
        var errorMessage: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(connectionString, &errorMessage) else {
            let message = errorMessage.map { PostgreSQLConnection.trimmed(String(cString: $0)) } ?? "out of memory"
            PQfreemem(errorMessage)
            throw PostgreSQLError(
                kind: .invalidConnectionString, message: message,
                store: "PostgreSQL store with connection string \"\(Self.redacted(connectionString))\"")
        }
        defer { PQconninfoFree(options) }
        var given: [(String, String)] = []
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { given.append((String(cString: keyword), String(cString: value))) }
            option += 1
        }
        let keys = Set(given.map(\.0))
        let defaults = [
            ("connect_timeout", "10"), ("keepalives", "1"), ("keepalives_idle", "10"),
            ("keepalives_interval", "5"), ("keepalives_count", "3"), ("fallback_application_name", "store-migrations"),
        ]
        parameters = given + defaults.filter { !keys.contains($0.0) }

        let environment = ProcessInfo.processInfo.environment
        let value = { (key: String, variable: String) in given.first { $0.0 == key }?.1 ?? environment[variable] }
        let host = value("host", "PGHOST") ?? value("hostaddr", "PGHOSTADDR") ?? "localhost"
        let port = value("port", "PGPORT") ?? "5432"
        let database = value("dbname", "PGDATABASE") ?? value("user", "PGUSER") ?? environment["USER"] ?? "postgres"
        self.schema = schema
        self.lockTimeout = lockTimeout
        self.statementTimeout = statementTimeout
        self.livenessCheckInterval = livenessCheckInterval
        self.lockRetries = lockRetries
        name = "PostgreSQL database \(database) on \(host):\(port), schema \(schema)"
        identityValue = "\(host):\(port)/\(database)/\(schema)"
        advisoryLock = AdvisoryLock(schema: schema, table: Self.levelsTable, timeout: lockTimeout)
    }

    /// Creates a store from connection parameters.
    ///
    /// ```swift
    /// let store = try PostgreSQLStore(host: "db.internal", database: "orders", user: "orders_service")
    /// ```
    public convenience init(
        host: String = "localhost", port: Int = 5432, database: String, user: String? = nil, password: String? = nil,
        schema: String = "public", lockTimeout: Duration = .seconds(120), statementTimeout: Duration? = nil,
        livenessCheckInterval: Duration = .seconds(1), lockRetries: LockRetries = .standard
    ) throws {
        var pairs = [("host", host), ("port", String(port)), ("dbname", database)]
        if let user { pairs.append(("user", user)) }
        if let password { pairs.append(("password", password)) }
        let quote = { (text: String) in
            "'" + text.escapingASCII("\\'", with: "\\") + "'"
        }
        try self.init(
            pairs.map { "\($0.0)=\(quote($0.1))" }.joined(separator: " "), schema: schema, lockTimeout: lockTimeout,
            statementTimeout: statementTimeout, livenessCheckInterval: livenessCheckInterval, lockRetries: lockRetries)
    }

    /// A store of `schema` that borrows its connection from `connections` for each call rather
    /// than keeping one: the tenant schemas of one database share a pool.
    convenience init(
        _ connectionString: String, schema: String, sharing connections: any SharedConnections, lockTimeout: Duration,
        lockRetries: LockRetries
    ) throws {
        try self.init(connectionString, schema: schema, lockTimeout: lockTimeout, lockRetries: lockRetries)
        sharedConnections = connections
    }

    /// The database, server and schema, never the password.
    public var description: String { name }

    // MARK: MigrationStore

    /// The server, database and schema: two store objects for one schema are one store to the
    /// scheduler.
    public var identity: StoreIdentity { StoreIdentity(kind: "postgresql", value: identityValue) }

    /// Reads every manager's record in one read-only snapshot. Creates no table or schema and
    /// takes no lock: a database without the store's tables has no records. A database that
    /// cannot be reached or does not exist throws ``PostgreSQLError``.
    public func readRecords() throws -> [String: MigrationRecord] {
        if let readAhead = sharedConnections?.takeRecordsReadAhead(schema: schema) { return readAhead }
        return try withConnection { db in
            guard !db.isInTransaction else { return try records(in: db) }
            // The catalog first, so that reading a table that is not there (a first deployment)
            // leaves no ERROR line in the server's log for operators to be alerted by. Only
            // `to_regclass`: on a new connection, where the server's catalog caches are cold,
            // a look-up of the `progress` column in `pg_attribute` cost more than this and the
            // records together (an older release's levels table has no `progress`: the records'
            // read takes it from the row as JSON, which lacks it then rather than failing).
            let catalog = try db.rows(
                "SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL",
                arguments: [.text(qualified(Self.levelsTable)), .text(qualified(Self.historyTable))])
            guard let row = catalog.first, try row[0] as Bool else { return [:] }
            let hasHistory: Bool = try row[1]
            do {
                return try records(in: db, hasHistory: hasHistory, columnsMayBeMissing: true, snapshot: true)
            } catch {
                abandon(db)
                throw error
            }
        }
    }

    /// A PostgreSQL store runs steps registered with ``/StoreMigrations/TransactionMode/none``.
    public var runsStepsOutsideTransactions: Bool { true }

    /// Runs a step in one transaction holding the store's advisory lock, reporting a wait for the
    /// lock (with the holder's backend pid) to `request`; see the type's discussion. A request
    /// for ``/StoreMigrations/TransactionMode/none`` runs `body` outside any transaction instead,
    /// holding the advisory lock at session level, and records it afterwards: at least once.
    public func transaction<T>(
        _ request: TransactionRequest, _ body: (inout [String: MigrationRecord], inout PostgreSQLConnection) throws -> T
    ) throws -> T {
        if request.mode == .none { return try runOutsideTransaction(request, body) }
        return try withConnection { db in
            guard !db.isInTransaction else {
                throw db.misuse("a migration step cannot start inside a migration body or a read; return from it first")
            }
            // Batches change no schema and carry their own state from one to the next: they wait.
            let retries = request.isBatch ? .off : request.options[LockRetriesOption.self] ?? lockRetries
            guard let lockTimeout = retries.lockTimeout else { return try attempt(request, on: db, body) }
            // The watch bounds the waits for table locks; rows are waited for as long as they are
            // held, whatever `lock_timeout` the session was given.
            let setting = "SET LOCAL lock_timeout = 0"
            let name = self.name
            let watch = TableLockWatch(
                pid: db.serverProcessID, serverVersion: db.serverVersion, parameters: parameters, store: name,
                lockTimeout: lockTimeout
            ) { holder, statement in
                request.waiting(StoreWait(
                    store: name, lock: "a row lock of `\(Self.firstLine(statement))` (waited for without lock_timeout)",
                    holderProcessID: holder?.pid))
            }
            defer { watch.close() }
            var timeOuts = 0
            var lastBlocker: TableLockWatch.Blocker?
            while true {
                do {
                    // Watched from when the advisory lock is held: a wait for it is no table lock's.
                    let result = try attempt(request, on: db, setting: setting, locked: watch.arm, body)
                    _ = watch.disarm()
                    return result
                } catch {
                    let outcome = watch.disarm()
                    let failure = error as? PostgreSQLError
                    // A `lock_timeout` of the body's own still counts as a table lock's time-out, as before.
                    guard outcome.cancelled || failure?.sqlState == "55P03" else { throw error }
                    // The last one seen: a try cancelled by a `lock_timeout` of the body's own may have seen none.
                    let blocker = outcome.blocker ?? lastBlocker
                    lastBlocker = blocker
                    timeOuts += 1
                    let sql = failure?.sql
                    guard timeOuts <= retries.retries else {
                        let message = outcome.cancelled
                            ? "the statement was cancelled after waiting \(Self.milliseconds(lockTimeout)) ms for a table lock"
                            : failure?.message ?? "\(error)"
                        throw PostgreSQLError(
                            kind: .tableLockTimeout(blockerPID: blocker?.pid, blockerQuery: blocker?.query, attempts: timeOuts),
                            sqlState: "55P03", message: message, sql: sql, store: name)
                    }
                    request.waiting(StoreWait(
                        store: name, lock: "a table lock of `\(sql.map(Self.firstLine) ?? "a statement")` (lock timeout "
                            + "\(Self.milliseconds(lockTimeout)) ms; retry \(timeOuts) of \(retries.retries))",
                        holderProcessID: blocker?.pid))
                    Thread.sleep(forTimeInterval: retries.pause(after: timeOuts).seconds)
                }
            }
        }
    }

    /// One try of a step: `BEGIN`, the advisory lock (and `setting`; then `locked` is called),
    /// the records, the body, the records again, `COMMIT`; everything rolled back when anything
    /// throws.
    private func attempt<T>(
        _ request: TransactionRequest, on db: PostgreSQLConnection, setting: String? = nil, locked: () -> Void = {},
        _ body: (inout [String: MigrationRecord], inout PostgreSQLConnection) throws -> T
    ) throws -> T {
        do {
            if request.isBatch && !db.storeTablesExist {
                // A batch may not change the schema, and the guard would count the store's own
                // tables as a change: they get a transaction of their own first.
                try advisoryLock.beginLockedTransaction(on: db, waiting: request)
                try createStoreTables(db)
                try db.execute("COMMIT")
                db.storeTablesExist = true
            }
            try advisoryLock.beginLockedTransaction(on: db, waiting: request, yielding: request.isBatch, setting: setting)
            locked()
            if !db.storeTablesExist { try createStoreTables(db) }
            let before: [String: MigrationRecord]
            do {
                before = try records(in: db)
            } catch let error as PostgreSQLError where db.storeTablesExist && error.saysATableOrSchemaIsMissing {
                // Dropped behind the connection (`DROP SCHEMA … CASCADE`, the testing kit's
                // discard): once more from `BEGIN`, creating them; the flag, now false, keeps this
                // to one retry. Cleared here, not checked per step, so the common path costs nothing.
                db.storeTablesExist = false
                abandon(db)
                return try attempt(request, on: db, setting: setting, locked: locked, body)
            }
            var records = before
            // The body gets its own reference: reassigning it cannot swap the store's connection.
            var content = db
            let statementGuard = try StatementGuard(refusesSchemaChanges: request.isBatch, on: db)
            db.statementGuard = statementGuard
            let result: T
            do {
                defer { db.statementGuard = nil }
                result = try body(&records, &content)
            } catch {
                // The guard's error first: the body's own error (or its catching one) came after it.
                try statementGuard.checkOpen()
                throw error
            }
            try statementGuard.checkOpen()
            try checkTransactionIntact(db)
            try statementGuard.bodyDone(on: db)
            if records != before { try write(records, over: before, in: db) }
            try db.execute("COMMIT")
            db.storeTablesExist = true
            db.deallocateStaleStatements()
            return result
        } catch {
            abandon(db)
            throw error
        }
    }

    /// The first line of a statement, for a wait's description.
    private static func firstLine(_ sql: String) -> String {
        let line = sql.split(whereSeparator: \.isNewline).first.map(String.init) ?? sql
        return line.count > 80 ? String(line.prefix(80)) + "…" : line
    }

    /// ``transaction(_:_:)`` for ``/StoreMigrations/TransactionMode/none``.
    private func runOutsideTransaction<T>(
        _ request: TransactionRequest, _ body: (inout [String: MigrationRecord], inout PostgreSQLConnection) throws -> T
    ) throws -> T {
        try withConnection { db in
            guard !db.isInTransaction else {
                throw db.misuse("a migration step cannot start inside a migration body or a read; return from it first")
            }
            do {
                try advisoryLock.acquireSessionLock(on: db, waiting: request)
                defer { advisoryLock.releaseSessionLock(on: db) }
                try createStoreTablesIfUnknown(db)
                let before: [String: MigrationRecord]
                do {
                    before = try records(in: db)
                } catch let error as PostgreSQLError where db.storeTablesExist && error.saysATableOrSchemaIsMissing {
                    // Dropped behind the connection, as in a transactional step.
                    db.storeTablesExist = false
                    try createStoreTablesIfUnknown(db)
                    before = try records(in: db)
                }
                var records = before
                var content = db
                let result = try body(&records, &content)
                guard !db.isInTransaction else {
                    throw db.misuse("a non-transactional migration body left a transaction open; it was rolled back and nothing was recorded")
                }
                if records != before {
                    try db.execute("BEGIN")
                    try write(records, over: before, in: db)
                    try db.execute("COMMIT")
                }
                db.deallocateStaleStatements()
                return result
            } catch {
                abandon(db)
                throw error
            }
        }
    }

    /// Creates the record tables in a transaction of their own unless the connection knows they exist.
    private func createStoreTablesIfUnknown(_ db: PostgreSQLConnection) throws {
        guard !db.storeTablesExist else { return }
        try db.execute("BEGIN")
        try createStoreTables(db)
        try db.execute("COMMIT")
        db.storeTablesExist = true
    }

    // MARK: Reading outside migrations

    /// Runs `body` in a read-only transaction on the store's connection: to look at the data
    /// from an app, a test or a first-launch decision. Writes fail (SQLSTATE `25006`).
    ///
    /// ```swift
    /// let orders: Int = try store.read { db in try db.scalar("SELECT count(*) FROM orders") } ?? 0
    /// ```
    public func read<T>(_ body: (PostgreSQLConnection) throws -> T) throws -> T {
        try withConnection { db in
            guard !db.isInTransaction else { return try body(db) }
            try db.execute("BEGIN READ ONLY")
            defer { abandon(db) }
            return try body(db)
        }
    }

    /// Runs `body` on the store's connection as it is, in no transaction and under no lock: for
    /// `StoreMigrationsPostgreSQLTesting`, which dumps a schema and restores it into a throwaway
    /// one, record tables included, around the store's own transactions.
    package func withSession<T>(_ body: (PostgreSQLConnection) throws -> T) throws -> T {
        try withConnection(body)
    }

    // MARK: Connection

    private func withConnection<T>(_ body: (PostgreSQLConnection) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        if let connection, connection.isBroken { self.connection = nil }
        let db = try connection ?? sharedConnections.map { try $0.take(schema: schema, opening: openConnection) } ?? openConnection()
        connection = db
        guard let sharedConnections else { return try body(db) }
        depth += 1
        defer {
            depth -= 1
            if depth == 0 {
                // `abandon` let go of a connection it could not bring back to idle: closed, not reused.
                sharedConnections.giveBack(db, reusable: connection === db && !db.isBroken && !db.isInTransaction)
                connection = nil
            }
        }
        return try body(db)
    }

    /// Opens the store's connection with its session settings sent in the startup packet
    /// (libpq's `options`, appended to any the connection string gives), so that they cost no
    /// round trip. A server older than 14, which refuses `client_connection_check_interval` at
    /// startup, gets a second attempt without them and the settings it knows by `SET`.
    private func openConnection() throws -> PostgreSQLConnection {
        var settings = [
            "tcp_keepalives_idle=10", "tcp_keepalives_interval=5", "tcp_keepalives_count=3", "tcp_user_timeout=10000",
            "client_connection_check_interval=\(Self.milliseconds(livenessCheckInterval))",
        ]
        if let statementTimeout { settings.append("statement_timeout=\(Self.milliseconds(statementTimeout))") }
        do {
            return try PostgreSQLConnection(parameters: parameters(adding: settings), store: name)
        } catch let error as PostgreSQLError where error.message.contains("unrecognized configuration parameter") {
            let db = try PostgreSQLConnection(parameters: parameters, store: name)
            var statements = settings.filter { !$0.hasPrefix("client_connection_check_interval") && !$0.hasPrefix("tcp_user_timeout") }
            if db.serverVersion >= 120_000 { statements.append("tcp_user_timeout=10000") }
            try db.execute(statements.map { "SET " + $0.replacingOccurrences(of: "=", with: " = ") }.joined(separator: "; "))
            return db
        }
    }

    /// The connection parameters with `settings` (`name=value`) added to libpq's `options`.
    private func parameters(adding settings: [String]) -> [(String, String)] {
        let flags = settings.map { "-c " + $0 }.joined(separator: " ")
        guard let index = parameters.firstIndex(where: { $0.0 == "options" }) else { return parameters + [("options", flags)] }
        var result = parameters
        result[index].1 += " " + flags
        return result
    }

    /// Ends whatever transaction a failed call left open; a connection that broke, or that cannot
    /// roll back, is closed, and the next call opens a fresh one.
    private func abandon(_ db: PostgreSQLConnection) {
        if !db.isBroken, db.transactionStatus != PQTRANS_IDLE { PQclear(PQexec(db.handle, "ROLLBACK")) }
        if db.isBroken || db.transactionStatus != PQTRANS_IDLE {
            if connection === db { connection = nil }
        } else {
            db.deallocateStaleStatements()
        }
    }

    /// Throws if the body ended the step's transaction or went on after one of its statements failed.
    private func checkTransactionIntact(_ db: PostgreSQLConnection) throws {
        switch db.transactionStatus {
        case PQTRANS_INTRANS:
            return
        case PQTRANS_INERROR:
            throw db.misuse(
                "a statement of the migration body failed and the body went on; the step was rolled back and nothing was recorded")
        default:
            throw db.misuse(
                "the migration body ended the step's transaction (COMMIT or ROLLBACK); what it committed stays, nothing was recorded")
        }
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return max(1, seconds * 1_000 + attoseconds / 1_000_000_000_000_000)
    }

    func qualified(_ table: String) -> String {
        PostgreSQLConnection.quoted(schema) + "." + PostgreSQLConnection.quoted(table)
    }

    /// Hides a password in a connection string quoted in an error.
    static func redacted(_ connectionString: String) -> String {
        var text = connectionString
        if let range = text.range(of: #"password\s*=\s*('([^'\\]|\\.)*'|\S+)"#, options: .regularExpression) {
            text.replaceSubrange(range, with: "password=***")
        }
        if let range = text.range(of: #"(?<=://)[^@/]*:[^@/]*@"#, options: .regularExpression) {
            let user = text[range].split(separator: ":").first.map(String.init) ?? ""
            text.replaceSubrange(range, with: "\(user):***@")
        }
        return text
    }
}
