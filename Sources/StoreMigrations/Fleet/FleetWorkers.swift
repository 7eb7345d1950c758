import Foundation

/// The threads a walk over a fleet runs its tenants on: at most `limit`, each started when a
/// tenant finds none idle and kept for the next tenant until the walk ends. A thread of its own
/// for each tenant in flight, rather than a Dispatch queue: a tenant mostly waits on its stores
/// (a server, a file lock), and libdispatch runs no more blocked work items at once than there
/// are processors, whatever the cap. Kept rather than one per tenant: starting a thread costs
/// about as much as a SQLite tenant's whole up-to-date check.
final class FleetWorkers: @unchecked Sendable {
    // @unchecked: `waiting`, `threads`, `idle` and `isClosed` are only touched with `condition` held.
    private let condition = NSCondition()
    private let limit: Int
    private var waiting: [@Sendable () -> Void] = []
    private var threads = 0
    private var idle = 0
    private var isClosed = false

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Runs `body`, then `finished`, on an idle thread, or on a new one while fewer than `limit`
    /// run; else on the first thread to end what it runs.
    func run(_ body: @escaping @Sendable () -> Void, finished: @escaping @Sendable () -> Void) {
        let startsThread: Bool = condition.withLock {
            waiting.append {
                body()
                finished()
            }
            guard idle == 0, threads < limit else {
                condition.signal()
                return false
            }
            threads += 1
            return true
        }
        guard startsThread else { return }
        let thread = Thread { [self] in work() }
        thread.name = "StoreMigrations.MigrationFleet"
        thread.start()
    }

    /// Lets the threads end once nothing is left to run.
    func close() {
        condition.withLock {
            isClosed = true
            condition.broadcast()
        }
    }

    private func work() {
        condition.lock()
        while true {
            if let body = waiting.first {
                waiting.removeFirst()
                condition.unlock()
                body()
                condition.lock()
                continue
            }
            if isClosed { break }
            idle += 1
            condition.wait()
            idle -= 1
        }
        threads -= 1
        condition.unlock()
    }
}
