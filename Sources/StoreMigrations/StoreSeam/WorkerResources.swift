import Foundation

/// What stores keep between the tenants one thread of a fleet's walk reads, one object of each
/// type: a SQLite store keeps a connection there, to which it attaches each tenant's file in turn,
/// rather than opening and closing a connection a tenant (Benchmarks/BENCHMARKS.md, issue 27).
///
/// Each of the walk's threads owns one, hands it to the coordinator of each tenant it runs, and
/// empties it when the walk ends, which releases what the stores kept. A coordinator made
/// outside a fleet has none, and its stores read as they always do.
package final class WorkerResources: @unchecked Sendable {
    // @unchecked: `resources` is only touched with `lock` held, and only objects that are
    // `Sendable` themselves are kept.
    private let lock = NSLock()
    private var resources: [ObjectIdentifier: AnyObject] = [:]

    package init() {}

    /// The object of type `R` kept here, made by `make` the first time it is asked for (and
    /// kept only when `make` returns one).
    package func resource<R: AnyObject & Sendable>(_ type: R.Type = R.self, make: () throws -> R) rethrows -> R {
        try lock.withLock {
            if let kept = resources[ObjectIdentifier(type)] { return kept as! R }
            let made = try make()
            resources[ObjectIdentifier(type)] = made
            return made
        }
    }

    /// How many objects are kept.
    package var count: Int {
        lock.withLock { resources.count }
    }

    /// Lets go of every object kept: the end of the walk of the thread that owns it.
    package func removeAll() {
        // Released after the lock: an object's deinit (a connection closing) may take a while.
        let released = lock.withLock {
            defer { resources = [:] }
            return resources
        }
        withExtendedLifetime(released) {}
    }
}

/// A store that reads its records more cheaply with what the thread reading them keeps between
/// tenants (``WorkerResources``): a fleet's planning asks it this way instead of
/// ``MigrationStore/readRecords()``. The read must be the same read: the same records, the same
/// errors, nothing created or changed.
package protocol ReadReusingStore: MigrationStore {
    /// Reads every manager's record as ``MigrationStore/readRecords()`` does, keeping in
    /// `resources` what the next store read on this thread may use again.
    func readRecords(reusing resources: WorkerResources) throws -> [String: MigrationRecord]
}
