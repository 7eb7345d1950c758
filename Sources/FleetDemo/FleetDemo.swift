// PostgreSQLStore exists where libpq is linked: Linux and macOS.
#if os(Linux) || os(macOS)
import Foundation
import StoreMigrations
import StoreMigrationsPostgreSQL
import ThrowawayPostgreSQL

/// `swift run fleet-demo`: starts a throwaway PostgreSQL server, makes 1,000 tenant schemas of a
/// CRM service at release 1.0, then starts four workers of release 2.1 at once (child processes
/// of this program) that share the fleet through claims in the database; kills one of them with
/// SIGKILL in the middle of a tenant (it hangs in its first 2.1 step, so that the kill lands
/// there on any machine); waits for the other three, which take over its tenant; and prints the
/// fleet's status (who did what) and its plan after.
///
/// ```
/// swift run fleet-demo [--tenants N]
/// ```
@main
struct FleetDemo {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "worker", arguments.count == 5 {
            runWorker(
                connectionString: arguments[1], name: arguments[2], stalls: arguments[3] == "stalls",
                gate: URL(fileURLWithPath: arguments[4]))
        }
        var tenants = 1_000
        if arguments.count == 2, arguments[0] == "--tenants", let count = Int(arguments[1]), count > 0 {
            tenants = count
        } else if !arguments.isEmpty {
            FileHandle.standardError.write(Data("usage: fleet-demo [--tenants N]\n".utf8))
            exit(2)
        }
        do {
            try demo(tenants: tenants)
        } catch {
            FileHandle.standardError.write(Data("fleet-demo: \(error)\n".utf8))
            exit(1)
        }
    }

    static func demo(tenants: Int) throws {
        print("Starting a throwaway PostgreSQL server…")
        let server = try ThrowawayPostgreSQLServer(.init(folderPrefix: "fleet-demo", settings: ["max_connections=100"]))
        defer { server.stop() }
        try server.createDatabase("crm")
        let connectionString = server.connectionString(database: "crm")
        print("Making \(tenants) tenant schemas at release 1.0…")
        try CRMFleet.makeTenants(tenants, connectionString: connectionString)
        print(try CRMFleet.fleet(connectionString: connectionString).plan())

        // Reading the status first creates the claims table the demo watches.
        let fleet = try CRMFleet.fleet(connectionString: connectionString, worker: "fleet-demo")
        _ = try fleet.status()
        print("\nStarting four workers of release \(CRMFleet.appVersion), sharing the fleet's claims…")
        let executable = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
        // Each worker waits at a gate until all four are up, so that on a busy machine the first
        // started does not migrate the whole fleet before the last one starts; worker-2 goes
        // first, and the others once it holds a tenant, so that the kill lands mid-tenant.
        let gate = server.folder.appendingPathComponent("workers-gate")
        try FileManager.default.createDirectory(at: gate, withIntermediateDirectories: true)
        var workers: [(name: String, process: Process, log: URL)] = []
        for index in 1...4 {
            let process = Process()
            process.executableURL = executable
            process.arguments = ["worker", connectionString, "worker-\(index)", index == 2 ? "stalls" : "runs", gate.path]
            let log = server.folder.appendingPathComponent("worker-\(index).out")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            let output = try FileHandle(forWritingTo: log)
            process.standardOutput = output
            process.standardError = output
            try process.run()
            try output.close()
            workers.append(("worker-\(index)", process, log))
        }
        try waitUntilReady(workers.map(\.name), at: gate)
        open(gate, for: ["worker-2"])
        // worker-2 dies once it holds a tenant (it hangs in its first 2.1 step).
        let watcher = try PostgreSQLStore(connectionString)
        while workers[1].process.isRunning {
            let counts = try watcher.read { db in
                try db.rows(
                    """
                    SELECT count(*) FILTER (WHERE state = 'migrated'), count(*) FILTER (WHERE state = 'running' AND worker = 'worker-2')
                    FROM store_migrations_fleet WHERE fleet = 'crm'
                    """
                ).first.map { (try $0[0] as Int, try $0[1] as Int) } ?? (0, 0)
            }
            if counts.1 > 0 {
                open(gate, for: ["worker-1", "worker-3", "worker-4"])
                kill(workers[1].process.processIdentifier, SIGKILL)
                print("Killed worker-2 (SIGKILL) while it held \(counts.1) tenant\(counts.1 == 1 ? "" : "s"), \(counts.0) tenants migrated.")
                break
            }
            usleep(20_000)
        }
        open(gate, for: workers.map(\.name))
        for worker in workers {
            worker.process.waitUntilExit()
            let text = (try? String(contentsOf: worker.log, encoding: .utf8)) ?? ""
            let ending = worker.process.terminationReason == .uncaughtSignal ? "killed" : "exit \(worker.process.terminationStatus)"
            print("\n\(worker.name) (\(ending)):\n" + (text.isEmpty ? "  (no report: killed before it printed one)" : text), terminator: "")
        }
        print("\n\nThe fleet's status, as any machine reads it:\n\(try fleet.status())")
        print("\nA fifth look at the fleet:\n\(try fleet.plan())")
    }

    /// Waits until every worker has said it is ready (a file `<name>.ready` in `gate`). The bound
    /// only catches a worker that never starts.
    static func waitUntilReady(_ names: [String], at gate: URL) throws {
        let ready = names.map { gate.appendingPathComponent("\($0).ready").path }
        let bound = ContinuousClock.now + .seconds(300)
        while !ready.allSatisfy(FileManager.default.fileExists(atPath:)) {
            guard ContinuousClock.now < bound else {
                throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: gate.path])
            }
            usleep(10_000)
        }
    }

    /// Lets the named workers start (a file `<name>.open` in `gate`).
    static func open(_ gate: URL, for names: [String]) {
        for name in names {
            _ = FileManager.default.createFile(atPath: gate.appendingPathComponent("\(name).open").path, contents: nil)
        }
    }

    /// One worker: says it is ready, waits for its gate to open, migrates the fleet, prints its
    /// report, exits.
    static func runWorker(connectionString: String, name: String, stalls: Bool, gate: URL) -> Never {
        _ = FileManager.default.createFile(atPath: gate.appendingPathComponent("\(name).ready").path, contents: nil)
        let bound = ContinuousClock.now + .seconds(300)
        while !FileManager.default.fileExists(atPath: gate.appendingPathComponent("\(name).open").path) {
            guard ContinuousClock.now < bound else {
                print("\(name): the demo never opened the workers' gate")
                exit(1)
            }
            usleep(5_000)
        }
        do {
            let report = try CRMFleet.fleet(connectionString: connectionString, worker: name, stalls: stalls).migrate(FleetRunOptions(maxTenantsInFlight: 4))
            print(report)
            exit(report.succeeded ? 0 : 1)
        } catch {
            print("\(name): failed: \(error)")
            exit(1)
        }
    }
}
#else
@main
struct FleetDemo {
    static func main() {}
}
#endif
