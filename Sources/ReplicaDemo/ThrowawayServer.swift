// PostgreSQLStore exists where libpq is linked: Linux and macOS.
#if os(Linux) || os(macOS)
import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// A PostgreSQL server for the demo alone: `initdb` into a temporary folder, a Unix socket in
/// that folder, no TCP; run as the `postgres` user when the demo runs as root (PostgreSQL
/// refuses root); stopped and removed by ``stop()``.
final class ThrowawayServer {
    let folder: URL
    let port = 5432
    private let binaries: URL
    private let serverUser: String?

    init() throws {
        binaries = try Self.findBinaries()
        serverUser = geteuid() == 0 ? "postgres" : nil
        folder = URL(fileURLWithPath: "/tmp").appendingPathComponent("replica-demo-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        if let serverUser {
            guard let account = getpwnam(serverUser) else {
                throw DemoError("the demo runs as root and needs a user \"\(serverUser)\" to run PostgreSQL as (apt-get install postgresql creates it)")
            }
            chown(folder.path, account.pointee.pw_uid, account.pointee.pw_gid)
        }
        let data = folder.appendingPathComponent("data").path
        try run("initdb", ["-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--locale=C"])
        try run("pg_ctl", [
            "-D", data, "-l", folder.appendingPathComponent("server.log").path, "-w",
            "-o", "-k \(folder.path) -p \(port) -c listen_addresses= -c fsync=off", "start",
        ])
    }

    /// The connection string of `database` on this server.
    func connectionString(database: String) -> String {
        "host=\(folder.path) port=\(port) user=postgres dbname=\(database)"
    }

    func stop() {
        try? run("pg_ctl", ["-D", folder.appendingPathComponent("data").path, "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(at: folder)
    }

    /// Runs one of the server's programs and waits for it, its output in a file. Started with
    /// `posix_spawn` and reaped with `waitpid` rather than with `Process`: the server that
    /// `pg_ctl start` leaves running inherits the descriptors `Process` watches for its child's
    /// end, so `waitUntilExit()` would wait for the server to stop.
    func run(_ tool: String, _ arguments: [String]) throws {
        let executable = binaries.appendingPathComponent(tool).path
        let argv = serverUser.map { ["/usr/sbin/runuser", "-u", $0, "--", executable] } ?? [executable]
        let log = folder.appendingPathComponent("\(tool).out")
        #if canImport(Darwin)
        var actions: posix_spawn_file_actions_t?
        #else
        var actions = posix_spawn_file_actions_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let cArguments = (argv + arguments).map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, cArguments, environ)
        guard spawned == 0 else { throw DemoError("could not start \(tool): \(String(cString: strerror(spawned)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        guard status == 0 else {
            throw DemoError("\(tool) failed: " + ((try? String(contentsOf: log, encoding: .utf8)) ?? ""))
        }
    }

    private static func findBinaries() throws -> URL {
        var candidates: [String] = []
        if let bin = ProcessInfo.processInfo.environment["PG_BIN"] { candidates.append(bin) }
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        candidates += versions.sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }.map { "/usr/lib/postgresql/\($0)/bin" }
        candidates += ["/opt/homebrew/bin", "/usr/local/bin"]
        candidates += (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0 + "/initdb") }) else {
            throw DemoError("no PostgreSQL server binaries (initdb, pg_ctl) found: install them (apt-get install postgresql, brew install postgresql) or set PG_BIN")
        }
        return URL(fileURLWithPath: found, isDirectory: true)
    }
}

struct DemoError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
#endif
