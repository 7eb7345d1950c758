import Foundation

/// Which session blocks a step's session while one of its statements waits for a lock, seen
/// from a second session: a statement that waits cannot ask, and once its `lock_timeout` ends
/// the wait, `pg_blocking_pids` of its session is empty again.
///
/// The second session is opened only when the step is still running a delay after it took the
/// store's advisory lock (half its `lock_timeout`: a statement that times out has waited at least
/// that long by then), so steps that finish sooner cost a scheduled work item and nothing else,
/// and a replica waiting for another's advisory lock polls nothing more. It then polls
/// `pg_blocking_pids(pid)` with `pg_stat_activity` every 20 ms until ``stop()``.
///
/// `@unchecked Sendable`: its mutable state (`stopped`, `blocker`) is read and written only with
/// `lock` held, by the step's thread and the one polling.
final class BlockerWatch: @unchecked Sendable {
    /// A session holding a lock another waits for.
    struct Blocker: Sendable, Hashable {
        let pid: Int32
        let query: String
    }

    private let lock = NSCondition()
    private var stopped = false
    private var polling = false
    private var blocker: Blocker?

    /// Starts watching the session `pid` after `delay`, connecting with `parameters`.
    init(pid: Int32, parameters: [(String, String)], store: String, after delay: Duration) {
        let parameters = parameters
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + delay.seconds) { [self] in
            lock.lock()
            guard !stopped else { return lock.unlock() }
            polling = true
            lock.unlock()
            defer {
                lock.lock()
                polling = false
                lock.broadcast()
                lock.unlock()
            }
            guard let watcher = try? PostgreSQLConnection(parameters: parameters, store: store) else { return }
            let sql = """
                SELECT pid, coalesce(query, '') FROM pg_stat_activity
                WHERE pid = ANY (pg_blocking_pids($1::int)) ORDER BY backend_start LIMIT 1
                """
            while true {
                let row = (try? watcher.rows(sql, arguments: [.integer(Int64(pid))]))?.first
                let seen = try? row.map { Blocker(pid: try $0[0], query: try $0[1]) }
                lock.lock()
                if let seen { blocker = seen }
                let done = stopped
                lock.unlock()
                if done { return }
                usleep(20_000)
            }
        }
    }

    /// Stops watching (waiting for a poll under way to end) and returns the last blocker seen.
    func stop() -> Blocker? {
        lock.lock()
        defer { lock.unlock() }
        stopped = true
        while polling { lock.wait() }
        return blocker
    }
}
