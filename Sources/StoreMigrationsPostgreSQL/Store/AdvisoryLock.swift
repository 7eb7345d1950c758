import CLibPQ
import Foundation
import StoreMigrations

/// The advisory lock that makes one ``PostgreSQLStore`` step at a time run across every
/// replica migrating one database and schema, and how replicas wait for it.
///
/// **Key**: a 64-bit FNV-1a hash of the UTF-8 text `store_migrations:<schema>.<levels table>`
/// (the store's schema and the name of its levels table, `store_migrations_levels`) read as a
/// signed `bigint`: `pg_advisory_xact_lock(key)` with one `bigint` argument. Every replica,
/// whatever its platform or process, derives the same key; stores on other schemas get other
/// keys. (Swift's `Hasher` is seeded per process, so it cannot serve.) ``PostgreSQLStore/lockKey``
/// gives it, to look it up in `pg_locks` (`classid` = its high 32 bits, `objid` its low 32
/// bits, `objsubid` = 1).
///
/// **Waiting holds no snapshot and no transaction.** A replica never blocks inside the server on
/// the lock: it polls `pg_try_advisory_xact_lock(key)` in a fresh transaction
/// (`BEGIN; SELECT pg_try_advisory_xact_lock(key)` in one round trip), rolls back at once when
/// the lock is taken, and sleeps (1 ms doubling to 25 ms, jittered) before the next try. The
/// transaction that wins the lock becomes the step's transaction. A blocking
/// `pg_advisory_lock` would wait inside a statement, that is with a snapshot: a concurrent
/// `CREATE INDEX CONCURRENTLY` waits for every transaction whose snapshot is older than its own
/// to end, and the waiter waits for the index builder's lock: a deadlock (Flyway issue 1654). A
/// poll's snapshot lives for one short statement, so an index build waits at most that long.
/// Non-transactional steps take the same key at session level (`pg_try_advisory_lock`, polled
/// the same way outside any transaction) and release it with `pg_advisory_unlock`; session and
/// transaction advisory locks on one key exclude each other across sessions.
///
/// **Batches let waiters in.** A resumable migration's batches each take the lock for one
/// transaction, and a replica running them takes it again right after each commit, before a
/// waiter polling every 25 ms would find it free: another replica's launch would wait for the
/// whole migration, however long. So a waiter announces itself by holding a shared session lock on
/// a second key, ``waitersKey`` (FNV-1a of `store_migrations_waiting:<schema>.<levels table>`),
/// for as long as it polls; a batch that finds it held after taking the lock rolls back, sleeps
/// 50 ms (twice the longest pause between polls) and then waits its turn like the others.
///
/// A wait past the store's lock timeout throws ``PostgreSQLError/Kind-swift.enum/lockTimeout(holderPID:)``
/// with the holder's server process id read from `pg_locks`.
struct AdvisoryLock: Sendable {
    /// The lock's key.
    let key: Int64
    /// The key waiters hold a shared session lock on while they poll.
    let waitersKey: Int64
    /// How long to wait before giving up.
    let timeout: Duration

    /// The lock of the store whose records live in `schema`.`table`.
    init(schema: String, table: String, timeout: Duration) {
        key = Self.key(schema: schema, table: table)
        waitersKey = Self.key(schema: schema, table: table, purpose: "store_migrations_waiting")
        self.timeout = timeout
    }

    /// The key of the store whose records live in `schema`.`table`.
    static func key(schema: String, table: String, purpose: String = "store_migrations") -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "\(purpose):\(schema).\(table)".utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return Int64(bitPattern: hash)
    }

    /// Opens a transaction on `connection` holding the lock, waiting as the type describes; a
    /// batch (`yielding`) first lets in a waiter that announced itself.
    /// `setting` (a `SET LOCAL` statement) is sent with the lock's poll, costing no round trip.
    func beginLockedTransaction(
        on connection: PostgreSQLConnection, waiting: TransactionRequest? = nil, yielding: Bool = false,
        setting: String? = nil
    ) throws {
        let sql = "BEGIN ISOLATION LEVEL READ COMMITTED; " + (setting.map { $0 + "; " } ?? "")
            + "SELECT pg_try_advisory_xact_lock(\(key))"
        if yielding {
            // One round trip, as without waiters: the lock, and whether another session waits.
            let row = try connection.queryEach(
                sql + ", EXISTS (SELECT FROM pg_locks WHERE \(Self.lockCondition(waitersKey)) AND pid <> pg_backend_pid())"
            ).last?.first
            let acquired = try row.map { try $0[0] as Bool } ?? false
            let othersWait = try row.map { try $0[1] as Bool } ?? false
            if acquired && !othersWait { return }
            try connection.execute("ROLLBACK")
            // Twice the longest pause between two polls: a waiter polls in the meantime.
            if acquired { usleep(50_000) }
        }
        try poll(on: connection, waiting: waiting) {
            let acquired = try connection.queryEach(sql).last?.first.map { try $0[0] as Bool } ?? false
            if !acquired { try connection.execute("ROLLBACK") }
            return acquired
        }
    }

    /// Takes the lock at session level on `connection`, outside any transaction.
    func acquireSessionLock(on connection: PostgreSQLConnection, waiting: TransactionRequest? = nil) throws {
        guard !connection.isInTransaction else {
            throw connection.misuse("the session lock of a non-transactional step was requested inside a transaction")
        }
        let sql = "SELECT pg_try_advisory_lock(\(key))"
        try poll(on: connection, waiting: waiting) { try connection.scalar(sql, as: Bool.self) ?? false }
    }

    /// Releases the session-level lock, if the connection still lives (a closed one released it).
    func releaseSessionLock(on connection: PostgreSQLConnection) {
        guard !connection.isBroken else { return }
        if connection.transactionStatus != PQTRANS_IDLE { PQclear(PQexec(connection.handle, "ROLLBACK")) }
        PQclear(PQexec(connection.handle, "SELECT pg_advisory_unlock(\(key))"))
    }

    /// The server process id of the session holding the lock, if any can be read.
    func holderPID(on connection: PostgreSQLConnection) -> Int32? {
        try? connection.scalar("SELECT pid FROM pg_locks WHERE \(Self.lockCondition(key)) LIMIT 1", as: Int32.self)
    }

    /// The rows of `pg_locks` of the advisory lock on `key` granted in the current database: its
    /// high 32 bits are `classid`, its low ones `objid`, and `objsubid` is 1 for a `bigint` key.
    private static func lockCondition(_ key: Int64) -> String {
        let classID = UInt32(truncatingIfNeeded: UInt64(bitPattern: key) >> 32)
        let objectID = UInt32(truncatingIfNeeded: UInt64(bitPattern: key))
        return """
            locktype = 'advisory' AND granted AND objsubid = 1 AND classid::int8 = \(classID) AND objid::int8 = \(objectID)
              AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
            """
    }

    /// Calls `attempt` until it returns `true`, sleeping between tries, or throws at the timeout.
    private func poll(on connection: PostgreSQLConnection, waiting: TransactionRequest?, _ attempt: () throws -> Bool) throws {
        let deadline = ContinuousClock.now + timeout
        var pause = 1_000  // microseconds
        var reported = false
        var announced = false
        defer {
            // Whatever the outcome: a session still announced after it stopped waiting would make
            // every batch of other replicas yield to nobody. A session that broke released it
            // with everything else; an attempt that failed left its transaction to roll back
            // first (its caller abandons it anyway).
            if announced, !connection.isBroken {
                if connection.transactionStatus == PQTRANS_INERROR { PQclear(PQexec(connection.handle, "ROLLBACK")) }
                PQclear(PQexec(connection.handle, "SELECT pg_advisory_unlock_shared(\(waitersKey))"))
            }
        }
        while true {
            if try attempt() { return }
            if !announced {
                // Outside any transaction: the attempt rolled back. Shared: never refused.
                announced = true
                try connection.execute("SELECT pg_try_advisory_lock_shared(\(waitersKey))")
            }
            if !reported, let waiting {
                // Read between attempts, outside any transaction: the waiter holds no snapshot.
                reported = true
                waiting.waiting(StoreWait(
                    store: connection.store, lock: "advisory lock \(key)", holderProcessID: holderPID(on: connection)))
            }
            if ContinuousClock.now >= deadline {
                throw PostgreSQLError(
                    kind: .lockTimeout(holderPID: holderPID(on: connection)),
                    message: "another session held advisory lock \(key) for more than \(timeout)",
                    store: connection.store)
            }
            usleep(UInt32(pause / 2 + Int.random(in: 0...pause / 2)))
            pause = min(pause * 2, 25_000)
        }
    }
}
