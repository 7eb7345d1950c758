import Foundation
import StoreMigrations

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// A cache written by a newer app (level 3.0) met by app version 2.0 with the `.reset` policy,
/// for `CrashRunner cache-reset`: several processes that each plan the reset must reset the
/// cache once, run each migration once between them, and never wipe what another one migrated.
///
/// The cache is `<dir>/Cache`. Migrations 1.0 and 2.0 each append `<version> <pid>` to
/// `runs.log` in the cache and write `<version>.txt`. After reading the cache's records, planning
/// creates the file `mine`, waits (30 seconds at most) for `theirs`, then pauses `delay` seconds:
/// two such processes both plan while the cache is still at 3.0, so both plans hold the reset,
/// and a delayed one starts its reset only after the other has run (the stale reset).
struct CacheResetScenario {
    static let appVersion: Version = "2.0"
    static let cacheName = "Cache"
    static let logName = "runs.log"
    static let managerName = "cache"

    let directory: URL
    let mine: URL
    let theirs: URL
    var delay: TimeInterval = 0

    var cacheURL: URL { directory.appendingPathComponent(Self.cacheName, isDirectory: true) }

    func coordinator() throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: Self.appVersion)
        let cache = try coordinator.manager(Self.managerName, store: CacheStore(directory: cacheURL))
        cache.newerStorePolicy = .reset
        for version: Version in ["1.0", "2.0"] {
            cache.register(version) { cache in
                try Self.append("\(version) \(getpid())", to: cache.fileURL(for: Self.logName))
                // A step that takes a moment, so that the other process's steps queue up behind it.
                Thread.sleep(forTimeInterval: 0.01)
                try Data("written by \(version)\n".utf8).write(to: cache.fileURL(for: "\(version).txt"))
            }
        }
        // Registered after the cache, so read after it while planning: holds planning until the
        // other process has read the cache's records too. It has no migrations, hence no steps.
        _ = try coordinator.manager(
            "planning-rendezvous", store: PlanningRendezvousStore(mine: mine, theirs: theirs, delay: delay))
        return coordinator
    }

    private static func append(_ line: String, to url: URL) throws {
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw ScenarioError(message: "cannot open \(url.path): errno \(errno)") }
        defer { close(descriptor) }
        let bytes = Array((line + "\n").utf8)
        guard write(descriptor, bytes, bytes.count) == bytes.count else {
            throw ScenarioError(message: "cannot append to \(url.path): errno \(errno)")
        }
    }
}

/// A store with nothing in it whose record reading is a rendezvous between two processes: it
/// creates `mine`, waits for `theirs`, then pauses `delay` seconds.
final class PlanningRendezvousStore: MigrationStore {
    typealias Content = Void

    let mine: URL
    let theirs: URL
    let delay: TimeInterval

    init(mine: URL, theirs: URL, delay: TimeInterval) {
        self.mine = mine
        self.theirs = theirs
        self.delay = delay
    }

    var description: String { "planning rendezvous \(mine.lastPathComponent)" }

    func readRecords() throws -> [String: MigrationRecord] {
        try Data().write(to: mine)
        // A safety net, not a deadline: the other process plans when a loaded machine lets it.
        let bound = Date().addingTimeInterval(600)
        while !FileManager.default.fileExists(atPath: theirs.path) {
            guard Date() < bound else { throw ScenarioError(message: "\(theirs.path) did not appear within 600 s") }
            Thread.sleep(forTimeInterval: 0.000_5)
        }
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        return [:]
    }

    func transaction<T>(
        _ request: TransactionRequest, _ body: (inout [String: MigrationRecord], inout Void) throws -> T
    ) throws -> T {
        var records: [String: MigrationRecord] = [:]
        var content: Void = ()
        return try body(&records, &content)
    }
}
