import Foundation
import StoreMigrations

/// Bounds a step's waits for table locks, and names who blocks them, from a second session: a
/// statement that waits cannot ask, and the server's `lock_timeout` cannot tell a table from a row.
///
/// `lock_timeout` bounds every lock wait: a long `UPDATE` behind one row another session holds
/// would be rolled back and redone, retry after retry, though its wait stalls nobody else. The
/// hazard the bound is for is a table lock: an `ALTER TABLE` waiting in a table's lock queue
/// blocks every query after it. So the step's session runs without `lock_timeout`, and this watch
/// reads the session's ungranted lock in `pg_locks`: a wait on a `relation` lock past the step's
/// lock timeout (measured from `pg_locks.waitstart`, PostgreSQL 14 and later; before 14, from
/// when the watch first saw it) is cancelled with `pg_cancel_backend`, in a statement that
/// cancels only while that wait lasts, and the store retries the step as for a time-out. A
/// wait on a row (`transactionid`, `tuple`) is never cancelled: it is reported once as a wait
/// and lasts as long as the row's holder keeps it.
///
/// One watch serves one step, all its attempts: its session is opened only when an attempt is
/// still running half the lock timeout after it took the store's advisory lock (a wait to bound
/// has lasted at least that long by then), and kept for the step's later attempts, so steps
/// that finish sooner cost a scheduled work item and nothing else, and a step retried five times
/// opens one session, not five. While armed past that delay it polls every 20 ms.
///
/// `@unchecked Sendable`: its mutable state is read and written only with `lock` held, by the
/// step's thread and the one polling, except that the polling thread uses `connection` without
/// it while `polling` is set: no other poll starts then, and ``close()`` comes after ``disarm()``,
/// which waits for `polling` to clear.
final class TableLockWatch: @unchecked Sendable {
    /// A session holding a lock another waits for.
    struct Blocker: Sendable, Hashable {
        let pid: Int32
        let query: String
    }

    /// What the watch saw of one attempt.
    struct Outcome {
        /// The last session seen holding a table lock the attempt waited for.
        let blocker: Blocker?
        /// Whether the watch cancelled the attempt's statement for waiting on a table lock too long.
        let cancelled: Bool
    }

    private let pid: Int32
    private let parameters: [(String, String)]
    private let store: String
    private let lockTimeout: Duration
    private let knowsWaitStart: Bool
    private let reportRowWait: @Sendable (_ holder: Blocker?, _ statement: String) -> Void

    private let lock = NSCondition()
    private var attempt = 0
    private var armed = false
    private var polling = false
    private var blocker: Blocker?
    private var cancelled = false
    private var connecting = false
    private var closed = false
    private var connection: PostgreSQLConnection?

    /// A watch of the step session `pid` (whose server runs `serverVersion`), connecting with
    /// `parameters` when it must; `reportRowWait` is called, from the polling thread, once an
    /// attempt when it waits for a row lock, with that row's holder and the waiting statement.
    init(
        pid: Int32, serverVersion: Int, parameters: [(String, String)], store: String, lockTimeout: Duration,
        reportRowWait: @escaping @Sendable (_ holder: Blocker?, _ statement: String) -> Void
    ) {
        self.pid = pid
        self.parameters = parameters
        self.store = store
        self.lockTimeout = lockTimeout
        knowsWaitStart = serverVersion >= 140_000
        self.reportRowWait = reportRowWait
    }

    /// Watches an attempt that has just taken the store's advisory lock.
    func arm() {
        let current: Int = lock.withLock {
            attempt += 1
            armed = true
            blocker = nil
            cancelled = false
            return attempt
        }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + (lockTimeout / 2).seconds) { [self] in
            poll(current)
        }
    }

    /// Stops watching the attempt, waiting for a poll under way to end, and says what it saw.
    func disarm() -> Outcome {
        lock.lock()
        defer { lock.unlock() }
        armed = false
        while polling { lock.wait() }
        return Outcome(blocker: blocker, cancelled: cancelled)
    }

    /// Closes the watch's session, if it opened one; call after ``disarm()``.
    func close() {
        lock.withLock {
            closed = true
            connection = nil
        }
    }

    private func poll(_ current: Int) {
        lock.lock()
        // A poll of an attempt armed again (the step retried from `BEGIN` at once) may still be
        // ending: one poll at a time uses the session.
        while polling || connecting { lock.wait() }
        guard armed, attempt == current else { return lock.unlock() }
        if connection == nil {
            // Connected outside `polling`, so that a step ending meanwhile does not wait for it;
            // kept for the step's later attempts.
            connecting = true
            lock.unlock()
            let opened = try? PostgreSQLConnection(parameters: parameters, store: store)
            lock.lock()
            connecting = false
            if !closed { connection = opened }
            lock.broadcast()
            guard armed, attempt == current else { return lock.unlock() }
        }
        polling = true
        lock.unlock()
        defer {
            lock.lock()
            polling = false
            lock.broadcast()
            lock.unlock()
        }
        let waitStart = knowsWaitStart ? "extract(epoch FROM clock_timestamp() - l.waitstart)::float8" : "NULL::float8"
        let sql = """
            SELECT l.locktype, \(waitStart), b.pid, b.query,
                (SELECT coalesce(query, '') FROM pg_stat_activity WHERE pid = l.pid)
            FROM pg_locks l
            LEFT JOIN LATERAL (
                SELECT pid, coalesce(query, '') AS query FROM pg_stat_activity
                WHERE pid = ANY (pg_blocking_pids(l.pid)) ORDER BY backend_start LIMIT 1
            ) b ON true
            WHERE l.pid = $1 AND NOT l.granted LIMIT 1
            """
        let arguments: [PostgreSQLValue] = [.integer(Int64(pid))]
        var relationWaitSeen: ContinuousClock.Instant?
        var rowWaitReported = false
        while true {
            // A session that broke or did not open is tried again at each poll: a watch without
            // its session bounds nothing.
            if connection?.isBroken ?? true {
                connection = try? PostgreSQLConnection(parameters: parameters, store: store)
            }
            if let connection, let row = (try? connection.rows(sql, arguments: arguments))?.first,
               let lockType = try? row[0] as String {
                let seen = try? row[2] as Int32?
                let holder = seen.flatMap { $0 }.map { Blocker(pid: $0, query: (try? row[3] as String) ?? "") }
                if lockType == "relation" {
                    let since = relationWaitSeen ?? ContinuousClock.now
                    relationWaitSeen = since
                    lock.withLock { if let holder, attempt == current { blocker = holder } }
                    let waited = (try? row[1] as Double?).flatMap { $0 }.map(Duration.seconds) ?? ContinuousClock.now - since
                    if waited >= lockTimeout, cancelStillWaitingStatement(on: connection) {
                        lock.withLock { if attempt == current { cancelled = true } }
                        return
                    }
                } else {
                    relationWaitSeen = nil
                    if !rowWaitReported {
                        rowWaitReported = true
                        reportRowWait(holder, (try? row[4] as String) ?? "")
                    }
                }
            } else {
                relationWaitSeen = nil
            }
            let stop = lock.withLock { !armed || attempt != current }
            if stop { return }
            usleep(20_000)
        }
    }

    /// Cancels the step's statement if it still waits for a table lock, in one statement: a
    /// wait that ended meanwhile is left alone.
    private func cancelStillWaitingStatement(on connection: PostgreSQLConnection) -> Bool {
        let sql = "SELECT pg_cancel_backend(pid) FROM pg_locks WHERE pid = $1 AND NOT granted AND locktype = 'relation' LIMIT 1"
        return (try? connection.rows(sql, arguments: [.integer(Int64(pid))]).first.map { try $0[0] as Bool }) == true
    }
}
