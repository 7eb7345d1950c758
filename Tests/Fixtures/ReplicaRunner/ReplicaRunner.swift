// PostgreSQLStore exists where libpq is linked: Linux and macOS.
#if os(Linux) || os(macOS)
import Foundation
import StoreMigrations
import StoreMigrationsPostgreSQL

/// A replica of a service migrating a shared PostgreSQL database at startup, as the PostgreSQL
/// tests start it, several at once, and kill it.
///
/// ```
/// ReplicaRunner <columns|index-builder|waiter|batched|rolling> <connection-string> [--steps N] [--sleep-ms MS]
///     [--rows N] [--hold-ms MS] [--marker FILE] [--lock-timeout SECONDS] [--wait-for GATE]
///     [--batch-rows N] [--row-sleep-us US] [--app-version VERSION]
/// ```
///
/// The connection string (key=value pairs) gets `application_name=replica-<pid>`, so that a
/// test can map the server process holding a lock (`pg_locks`) to the replica process to kill.
/// With `--wait-for`, the replica first waits for the file `GATE` to exist, so that several can
/// start at the same moment. It prints one `step <id> <outcome>` line per step, then one
/// `level <manager> <level>` line per manager (and a `seen <step> <level>` line for each step
/// found applied, with the level read under the lock); a run that leaves deferred work waits for its
/// background run and prints that run's lines after the launch's. Exit status: 0 when every step applied or was
/// found applied, 1 when a step failed, 2 when the run could not start, 64 for bad arguments.
@main
struct ReplicaRunner {
    static func main() {
        var arguments = Array(CommandLine.arguments.dropFirst())
        guard arguments.count >= 2, let kind = ReplicaScenario.Kind(rawValue: arguments.removeFirst()) else { usage() }
        let connectionString = arguments.removeFirst() + " application_name=replica-\(getpid())"
        var scenario = ReplicaScenario(kind: kind, connectionString: connectionString)
        var gate: URL?
        while arguments.count >= 2 {
            let option = arguments.removeFirst(), value = arguments.removeFirst()
            switch (option, Int(value)) {
            case ("--steps", let count?): scenario.steps = count
            case ("--sleep-ms", let milliseconds?): scenario.sleepMilliseconds = milliseconds
            case ("--rows", let count?): scenario.rows = count
            case ("--hold-ms", let milliseconds?): scenario.holdMilliseconds = milliseconds
            case ("--lock-timeout", let seconds?): scenario.lockTimeout = .seconds(seconds)
            case ("--batch-rows", let count?): scenario.batchRows = count
            case ("--row-sleep-us", let microseconds?): scenario.rowSleepMicroseconds = microseconds
            case ("--marker", _): scenario.marker = URL(fileURLWithPath: value)
            case ("--wait-for", _): gate = URL(fileURLWithPath: value)
            case ("--app-version", _):
                guard let version = Version(value) else { usage() }
                scenario.appVersion = version
            default: usage()
            }
        }
        guard arguments.isEmpty else { usage() }

        let coordinator: MigrationCoordinator
        do {
            coordinator = try scenario.coordinator()
            // A safety net, not a deadline: the test opens the gate once every replica has started.
            if let gate { try waitForFile(gate, seconds: 600) }
        } catch {
            fail(status: 2, error)
        }
        do {
            printReport(try coordinator.run())
            // Deferred work goes on in the background: a replica serves meanwhile; this one waits.
            if let background = coordinator.backgroundRun { printReport(try background.wait()) }
        } catch let error as MigrationRunError {
            printReport(error.report)
            fail(status: 1, error)
        } catch {
            fail(status: 2, error)
        }
    }

    static func printReport(_ report: MigrationReport) {
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

    private static func waitForFile(_ url: URL, seconds: TimeInterval) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while !FileManager.default.fileExists(atPath: url.path) {
            guard Date() < deadline else {
                throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: url.path])
            }
            Thread.sleep(forTimeInterval: 0.000_2)
        }
    }

    private static func fail(status: Int32, _ error: any Error) -> Never {
        FileHandle.standardError.write(Data("\(error)\n".utf8))
        exit(status)
    }

    private static func usage() -> Never {
        FileHandle.standardError.write(Data("""
            usage: ReplicaRunner <columns|index-builder|waiter|batched|rolling> <connection-string> [--steps N] [--sleep-ms MS]
                       [--rows N] [--hold-ms MS] [--marker FILE] [--lock-timeout SECONDS] [--wait-for GATE]
                       [--batch-rows N] [--row-sleep-us US] [--app-version VERSION]

            """.utf8))
        exit(64)
    }
}
#endif
