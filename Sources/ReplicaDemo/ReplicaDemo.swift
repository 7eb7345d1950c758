// PostgreSQLStore exists where libpq is linked: Linux and macOS.
#if os(Linux) || os(macOS)
import Foundation
import StoreMigrations
import StoreMigrationsCommand
import StoreMigrationsPostgreSQL
import ThrowawayPostgreSQL

/// `swift run replica-demo`: starts a throwaway PostgreSQL server, launches four replicas of an
/// orders service at once (child processes of this program) against one database, and shows
/// each replica's report: every step applied by exactly one replica, the others waited for it
/// and found it applied. Then, as a release job would once the deployment is done, it runs the
/// service's migration command: `status`, and `migrate --post-deploy` for the contract step.
///
/// ```
/// swift run replica-demo [--replicas N]
/// swift run replica-demo --database CONNECTION-STRING <status | plan | migrate | baseline> [options]
/// ```
///
/// The second form is the service's migration command (``MigrationCommand``) on a database of
/// your own; it exits with the command's exit code.
@main
struct ReplicaDemo {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "replica", arguments.count == 3 {
            runReplica(connectionString: arguments[1], gate: URL(fileURLWithPath: arguments[2]))
        }
        if arguments.first == "--database", arguments.count >= 2 {
            runCommand(connectionString: arguments[1], arguments: Array(arguments.dropFirst(2)))
        }
        var replicas = 4
        if arguments.count == 2, arguments[0] == "--replicas", let count = Int(arguments[1]), count > 0 {
            replicas = count
        } else if !arguments.isEmpty {
            FileHandle.standardError.write(Data(
                "usage: replica-demo [--replicas N]\n       replica-demo --database CONNECTION-STRING <subcommand> [options]\n".utf8))
            exit(64)
        }
        do {
            try demo(replicas: replicas)
        } catch {
            FileHandle.standardError.write(Data("replica-demo: \(error)\n".utf8))
            exit(1)
        }
    }

    static func demo(replicas: Int) throws {
        print("Starting a throwaway PostgreSQL server…")
        let server = try ThrowawayPostgreSQLServer(.init(folderPrefix: "replica-demo"))
        defer { server.stop() }
        try server.createDatabase("orders")
        let connectionString = server.connectionString(database: "orders")
        print("Server on \(server.folder.path), database orders.\n")
        print("Launching \(replicas) replicas of the orders service (app version \(OrdersService.appVersion)) at once…\n")

        let gate = server.folder.appendingPathComponent("gate")
        let executable = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
        var children: [(Process, URL)] = []
        for index in 0..<replicas {
            let process = Process()
            process.executableURL = executable
            process.arguments = ["replica", connectionString, gate.path]
            let log = server.folder.appendingPathComponent("replica-\(index).out")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            let output = try FileHandle(forWritingTo: log)
            process.standardOutput = output
            process.standardError = output
            try process.run()
            try output.close()
            children.append((process, log))
        }
        try Data().write(to: gate)
        var appliedBy: [String: [String]] = [:]
        for (process, log) in children {
            process.waitUntilExit()
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            print(text)
            for line in text.split(separator: "\n") {
                let fields = line.split(separator: " ")
                if fields.count > 3, fields[1] == "applied" { appliedBy[String(fields[2]), default: []].append(String(fields[0])) }
            }
        }
        print("Who applied what:")
        for (step, replicas) in appliedBy.sorted(by: { $0.key < $1.key }) {
            print("  \(step): \(replicas.joined(separator: ", "))\(replicas.count == 1 ? "" : "  ← more than once!")")
        }
        let coordinator = try OrdersService.coordinator(connectionString: connectionString)
        let plan = try coordinator.plan()
        print("\nA fifth launch finds the database \(plan.isUpToDate ? "up to date" : "NOT up to date"): \(plan)")

        print("\nThe deployment is done; the release job asks for the status, then runs the post-deploy migrations:")
        let command = MigrationCommand(coordinator: coordinator, commandName: "replica-demo --database …")
        for arguments in [["status"], ["migrate", "--post-deploy", "--yes"], ["status", "--check"]] {
            print("\n$ replica-demo --database … \(arguments.joined(separator: " "))")
            fflush(nil)  // print buffers; the command writes to the file descriptor directly
            let code = command.run(arguments: arguments)
            print("(exit code \(code.rawValue))")
            fflush(nil)
        }
    }

    /// The service's migration command on the database at `connectionString`; exits with its code.
    static func runCommand(connectionString: String, arguments: [String]) -> Never {
        do {
            let coordinator = try OrdersService.coordinator(connectionString: connectionString)
            exit(MigrationCommand(coordinator: coordinator, commandName: "replica-demo --database …").run(arguments: arguments).rawValue)
        } catch {
            FileHandle.standardError.write(Data("replica-demo: \(error)\n".utf8))
            exit(MigrationCommand.ExitCode.failure.rawValue)
        }
    }

    /// One replica: waits for the gate, migrates, prints its report, exits.
    static func runReplica(connectionString: String, gate: URL) -> Never {
        let me = "replica-\(getpid())"
        do {
            let coordinator = try OrdersService.coordinator(connectionString: connectionString)
            while !FileManager.default.fileExists(atPath: gate.path) { usleep(200) }
            let report = try coordinator.run()
            var lines = ["\(me): \(report.didRunAnything ? "migrated" : "found everything applied") in \(String(format: "%.2f", report.duration)) s"]
            for step in report.steps {
                let seconds = String(format: "%.3f s", step.duration ?? 0)
                switch step.outcome {
                case .applied: lines.append("\(me)   applied \(step.step.id) in \(seconds)")
                case .alreadyApplied: lines.append("\(me)   waited, found \(step.step.id) applied by another replica (\(seconds))")
                default: lines.append("\(me)   \(step.step.id): \(step.outcome)")
                }
            }
            print(lines.joined(separator: "\n"))
            exit(0)
        } catch {
            print("\(me): failed: \(error)")
            exit(1)
        }
    }
}
#endif
