import Foundation

/// One walk over a fleet: at most `limit` threads, each taking the source's next tenant itself
/// whenever it is free and running it, until the source ends. A thread of its own for each
/// tenant in flight, rather than a Dispatch queue: a tenant mostly waits on its stores (a server,
/// a file lock), and libdispatch runs no more blocked work items at once than there are
/// processors, whatever the cap. Each thread takes its own next tenant, rather than a walking
/// thread handing tenants out, so that a tenant costs no wake-up of another thread, which a
/// SQLite tenant's up-to-date check felt (Benchmarks/BENCHMARKS.md, issue 27). Each thread owns
/// the ``WorkerResources`` its tenants' stores keep things in between tenants (a SQLite
/// connection), let go of when the thread ends, before the walk returns.
final class FleetWorkers: @unchecked Sendable {
    // @unchecked: `walk`, `threads`, `isOver` and `failure` are only used with `lock` held;
    // `running` is thread-safe.
    private let lock = NSLock()
    private let running = DispatchGroup()
    private let limit: Int
    /// The caller's closures, for as long as the walk lasts: let go of before `walk` returns,
    /// since its threads' `Thread` objects, which hold this object, may outlive it.
    private var walk: Walk?
    private var threads = 0
    private var isOver = false
    private var failure: (any Error)?

    private struct Walk {
        let next: () throws -> Tenant?
        let mayStart: (Tenant) -> Int?
        let notStarted: (Tenant) -> Void
        let work: (Tenant, Int) -> @Sendable (WorkerResources) -> Void
    }

    private init(limit: Int, walk: Walk) {
        self.limit = max(1, limit)
        self.walk = walk
    }

    /// Takes tenants from `next` and runs the work `work` makes of each, at most `limit` at once,
    /// on threads of the walk's own; returns when all have ended.
    ///
    /// A tenant is taken only by a thread free to run it, so that the source is never read
    /// further ahead than the tenants running. `mayStart` is asked then for the tenant's number,
    /// in the source's order: a tenant it refuses goes to `notStarted` instead. The work is given
    /// its thread's resources, emptied when the thread ends. Rethrows what
    /// `next` throws, once the tenants running have ended; no tenant is taken after it.
    static func walk(
        next: () throws -> Tenant?, limit: Int, mayStart: (Tenant) -> Int?, notStarted: (Tenant) -> Void,
        work: (Tenant, Int) -> @Sendable (WorkerResources) -> Void
    ) throws {
        try withoutActuallyEscaping(next) { next in
            try withoutActuallyEscaping(mayStart) { mayStart in
                try withoutActuallyEscaping(notStarted) { notStarted in
                    try withoutActuallyEscaping(work) { work in
                        let workers = FleetWorkers(
                            limit: limit, walk: Walk(next: next, mayStart: mayStart, notStarted: notStarted, work: work))
                        workers.lock.withLock { workers.startThread() }
                        workers.running.wait()
                        let failure = workers.lock.withLock {
                            workers.walk = nil
                            return workers.failure
                        }
                        if let failure { throw failure }
                    }
                }
            }
        }
    }

    /// Starts one more thread; with `lock` held.
    private func startThread() {
        threads += 1
        running.enter()
        let thread = Thread { [self] in
            let resources = WorkerResources()
            while let body = take() { body(resources) }
            resources.removeAll()
            running.leave()
        }
        thread.name = "StoreMigrations.MigrationFleet"
        thread.start()
    }

    /// The work of the next tenant to run, once those refused are passed to `notStarted`; `nil`
    /// when the source has ended or failed. Starts another thread while fewer than `limit` run,
    /// so that threads are started only as tenants keep them all busy.
    private func take() -> (@Sendable (WorkerResources) -> Void)? {
        lock.withLock {
            guard let walk else { return nil }
            while !isOver {
                let tenant: Tenant?
                do {
                    tenant = try walk.next()
                } catch {
                    failure = error
                    isOver = true
                    return nil
                }
                guard let tenant else {
                    isOver = true
                    return nil
                }
                guard let number = walk.mayStart(tenant) else {
                    walk.notStarted(tenant)
                    continue
                }
                if threads < limit { startThread() }
                return walk.work(tenant, number)
            }
            return nil
        }
    }
}
