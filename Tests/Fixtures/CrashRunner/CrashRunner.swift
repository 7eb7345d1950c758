import Foundation
import StoreMigrations
import StoreMigrationsSQLite

/// The executable the crash and multi-process tests launch, kill and launch again.
///
/// ```
/// CrashRunner migrate <dir> [--lock-timeout SECONDS] [--busy-timeout SECONDS] [--wait-for GATE]
///                           [--slow-library-step SECONDS]
/// CrashRunner open <dir> <gate>
/// CrashRunner hold <dir> <prefs|library|thumbnails> <marker>
/// CrashRunner read <dir> <marker>
/// CrashRunner rendezvous <dir> <prefs|library|thumbnails> <mine> <theirs> [SECONDS]
/// CrashRunner cache-reset <dir> <gate> <mine> <theirs> [DELAY]
/// CrashRunner step <dir> <prefs|thumbnails>
/// CrashRunner batched <dir> <rows> <batch rows>
/// CrashRunner mapped <dir> <rows> <batch rows>
/// CrashRunner squashed <dir> [hold]
/// CrashRunner created <dir> [hold]
/// CrashRunner rolling <dir> <prefs|library> <app version> <gate>
/// ```
///
/// `migrate` runs the ``Scenario`` and prints one `step <id> <outcome>` line per step, then one
/// `level <manager> <level>` line per manager; with `--wait-for` it first waits for the file
/// `GATE` to exist, so that several processes can be started at the same moment; with
/// `--slow-library-step` the body of `library@2.0` sleeps that long inside its transaction, so
/// that the other processes wait for the database's write lock; `--busy-timeout default` uses
/// ``SQLiteStore``'s default wait. `open` only
/// opens the database and reads its levels, once `gate` exists. `hold` migrates one store with a step that
/// creates `marker` and then sleeps inside the store's lock until it is killed. `rendezvous`
/// migrates one store with a step that creates `mine` and then waits, inside the store's lock,
/// (30 seconds, or `SECONDS`) for another process to create `theirs`: two such processes on
/// different stores both finish only if they hold their locks at the same time. `cache-reset`
/// waits for `gate`, then runs the ``CacheResetScenario`` (a newer cache reset by app version
/// 2.0), meeting the process that creates `theirs` while planning and pausing `DELAY` seconds
/// after that. `step` applies one migration to one file store, for tests that trace the system
/// calls of a step. `read` holds a read transaction of the scenario's database, left in its journal
/// mode, from a first read until it is killed, creating `marker` once the read holds its lock. `batched` runs the ``BatchedScenario``, a resumable row transform; `mapped`
/// the ``MappedScenario``, a resumable schema migration with an entity mapping; `squashed` the
/// ``SquashedScenario``, a squashed fresh install that, given `hold`, touches it and sleeps inside
/// the squash's transaction; `created` the ``SchemaCreatedScenario``, a fresh install created
/// from the declared schema that, given `hold`, touches it and sleeps inside the creation's
/// transaction. `rolling`
/// waits for `gate`, then runs the ``RollingScenario`` as app `<app version>`, and prints a
/// `seen <step> <level>` line for each step it found applied, with the level it read under the lock.
///
/// Exit status: 0 when every step applied, 1 when a step failed, 2 when the run could not
/// start (planning or a store's level failed), 64 for bad arguments. Errors go to stderr.
@main
struct CrashRunner {
    static func main() {
        var arguments = Array(CommandLine.arguments.dropFirst())
        guard arguments.count >= 2 else { usage() }
        let mode = arguments.removeFirst()
        let directory = URL(fileURLWithPath: arguments.removeFirst(), isDirectory: true)
        var scenario = Scenario(directory: directory)

        let coordinator: MigrationCoordinator
        do {
            switch mode {
            case "migrate":
                var gate: URL?
                while arguments.count >= 2 {
                    let option = arguments.removeFirst(), value = arguments.removeFirst()
                    switch (option, Double(value)) {
                    case ("--lock-timeout", let seconds?): scenario.lockTimeout = .milliseconds(Int(seconds * 1_000))
                    case ("--busy-timeout", let seconds?): scenario.busyTimeout = seconds
                    case ("--wait-for", _): gate = URL(fileURLWithPath: value)
                    case ("--slow-library-step", let seconds?): scenario.slowLibraryStep = seconds
                    case ("--busy-timeout", nil) where value == "default":
                        scenario.busyTimeout = SQLiteStore(url: scenario.databaseURL).busyTimeout
                    default: usage()
                    }
                }
                guard arguments.isEmpty else { usage() }
                coordinator = try scenario.coordinator()
                if let gate { try waitForFile(gate, seconds: eventWaitBound) }
            case "open":
                // Opens the scenario's database once the gate file exists, as every process of
                // an app and its extensions launching together does first.
                guard arguments.count == 1 else { usage() }
                try waitForFile(URL(fileURLWithPath: arguments[0]), seconds: eventWaitBound)
                let store = SQLiteStore(url: scenario.databaseURL)
                try store.write { _ in }
                print("opened, \(try store.readRecords().count) managers")
                exit(0)
            case "step":
                guard arguments.count == 1 else { usage() }
                coordinator = try oneStep(on: arguments[0], in: scenario, manager: "traced") {}
            case "hold":
                guard arguments.count == 2 else { usage() }
                let marker = URL(fileURLWithPath: arguments[1])
                coordinator = try oneStep(on: arguments[0], in: scenario, manager: "holder") {
                    try touch(marker)
                    // Killed long before this; the bound only keeps a forgotten process from
                    // holding the lock forever.
                    Thread.sleep(forTimeInterval: 600)
                    throw ScenarioError(message: "hold: nobody killed this process")
                }
            case "read":
                guard arguments.count == 1 else { usage() }
                let marker = URL(fileURLWithPath: arguments[0])
                try SQLiteStore(url: scenario.databaseURL, journalMode: .keep).read { db in
                    _ = try db.scalar("SELECT count(*) FROM sqlite_master", as: Int.self)
                    try touch(marker)
                    Thread.sleep(forTimeInterval: 600)
                }
                throw ScenarioError(message: "read: nobody killed this process")
            case "rendezvous":
                guard (3...4).contains(arguments.count) else { usage() }
                let patience = arguments.count == 4 ? Double(arguments[3]) ?? eventWaitBound : eventWaitBound
                let mine = URL(fileURLWithPath: arguments[1]), theirs = URL(fileURLWithPath: arguments[2])
                coordinator = try oneStep(on: arguments[0], in: scenario, manager: "rendezvous") {
                    try touch(mine)
                    try waitForFile(theirs, seconds: patience)
                }
            case "batched":
                guard arguments.count == 2, let rows = Int(arguments[0]), let batchRows = Int(arguments[1]) else { usage() }
                coordinator = try BatchedScenario(directory: directory, rows: rows, batchRows: batchRows).coordinator()
            case "mapped":
                guard arguments.count == 2, let rows = Int(arguments[0]), let batchRows = Int(arguments[1]) else { usage() }
                coordinator = try MappedScenario(directory: directory, rows: rows, batchRows: batchRows).coordinator()
            case "squashed":
                guard arguments.count <= 1 else { usage() }
                coordinator = try SquashedScenario(directory: directory, hold: arguments.first.map { URL(fileURLWithPath: $0) })
                    .coordinator()
            case "created":
                guard arguments.count <= 1 else { usage() }
                coordinator = try SchemaCreatedScenario(directory: directory, hold: arguments.first.map { URL(fileURLWithPath: $0) })
                    .coordinator()
            case "rolling":
                guard arguments.count == 3, let store = RollingScenario.Store(rawValue: arguments[0]),
                      let appVersion = Version(arguments[1]) else { usage() }
                coordinator = try RollingScenario(directory: directory, store: store, appVersion: appVersion).coordinator()
                try waitForFile(URL(fileURLWithPath: arguments[2]), seconds: eventWaitBound)
            case "cache-reset":
                guard (3...4).contains(arguments.count) else { usage() }
                var reset = CacheResetScenario(
                    directory: directory, mine: URL(fileURLWithPath: arguments[1]), theirs: URL(fileURLWithPath: arguments[2]))
                if arguments.count == 4 {
                    guard let delay = Double(arguments[3]) else { usage() }
                    reset.delay = delay
                }
                coordinator = try reset.coordinator()
                try waitForFile(URL(fileURLWithPath: arguments[0]), seconds: eventWaitBound)
            default:
                usage()
            }
        } catch {
            fail(status: 2, error)
        }

        do {
            printReport(try coordinator.run())
        } catch let error as MigrationRunError {
            printReport(error.report)
            fail(status: 1, error)
        } catch {
            fail(status: 2, error)
        }
    }

    /// A coordinator with one manager on the scenario's store `store`, whose only step runs
    /// `body` while holding the store's lock (or write transaction).
    private static func oneStep(
        on store: String, in scenario: Scenario, manager: String, _ body: @escaping @Sendable () throws -> Void
    ) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: Scenario.appVersion)
        switch store {
        case "prefs":
            try coordinator.manager(manager, store: PreferencesStore(url: scenario.preferencesURL))
                .register("1.0") { _ in try body() }
        case "library":
            try coordinator.manager(manager, store: SQLiteStore(url: scenario.databaseURL))
                .register("1.0") { db in
                    // Writes, so that a kill in the middle has something to roll back.
                    try db.execute("CREATE TABLE \(manager)(x)")
                    try body()
                }
        case "thumbnails":
            try coordinator.manager(manager, store: CacheStore(directory: scenario.cacheURL))
                .register("1.0") { _ in try body() }
        default:
            usage()
        }
        return coordinator
    }

    private static func touch(_ url: URL) throws {
        try Data().write(to: url)
    }

    /// How long the runner waits for a file the test or another runner makes: a safety net, not
    /// a deadline, since a loaded machine may start the other process late.
    private static let eventWaitBound: TimeInterval = 600

    private static func waitForFile(_ url: URL, seconds: TimeInterval) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !FileManager.default.fileExists(atPath: url.path) {
            guard Date() < deadline else {
                throw ScenarioError(message: "\(url.path) did not appear within \(seconds) s")
            }
            Thread.sleep(forTimeInterval: 0.000_05)
        }
    }

    private static func printReport(_ report: MigrationReport) {
        var lines: [String] = []
        for step in report.steps {
            let outcome: String
            switch step.outcome {
            case .applied: outcome = "applied"
            case .alreadyApplied: outcome = "alreadyApplied"
            case .failed: outcome = "failed"
            case .skipped: outcome = "skipped"
            case .cancelled: outcome = "cancelled"
            case .inProgress: outcome = "inProgress"
            case .deferred: outcome = "deferred"
            }
            lines.append("step \(step.step.id) \(outcome)")
            if case .alreadyApplied(let level?) = step.outcome { lines.append("seen \(step.step.id) \(level)") }
        }
        for manager in report.managers {
            lines.append("level \(manager.name) \(manager.levelAfter?.description ?? "none")")
        }
        print(lines.joined(separator: "\n"))
    }

    private static func fail(status: Int32, _ error: any Error) -> Never {
        FileHandle.standardError.write(Data("\(error)\n".utf8))
        exit(status)
    }

    private static func usage() -> Never {
        FileHandle.standardError.write(Data("""
            usage: CrashRunner migrate <dir> [--lock-timeout SECONDS] [--busy-timeout SECONDS] [--wait-for GATE]
                   CrashRunner open <dir> <gate>
                   CrashRunner hold <dir> <prefs|library|thumbnails> <marker>
                   CrashRunner read <dir> <marker>
                   CrashRunner rendezvous <dir> <prefs|library|thumbnails> <mine> <theirs> [SECONDS]
                   CrashRunner cache-reset <dir> <gate> <mine> <theirs> [DELAY]
                   CrashRunner step <dir> <prefs|thumbnails>
                   CrashRunner batched <dir> <rows> <batch rows>
                   CrashRunner mapped <dir> <rows> <batch rows>
                   CrashRunner squashed <dir> [hold]
                   CrashRunner created <dir> [hold]
                   CrashRunner rolling <dir> <prefs|library> <app version> <gate>

            """.utf8))
        exit(64)
    }
}
