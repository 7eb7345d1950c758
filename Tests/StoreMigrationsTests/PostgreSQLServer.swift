// PostgreSQLStore exists where libpq is linked: Linux and macOS.
#if os(Linux) || os(macOS)
import Foundation
import Testing
@testable import StoreMigrations

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// A PostgreSQL server of the tests' own: `initdb` into a temporary folder, listening on a
/// Unix socket in that folder and on a free loopback port, run as the `postgres` user when the
/// tests run as root, stopped (and its folder removed) when the test process exits.
///
/// One server, ``shared``, serves every PostgreSQL suite of a test process; each test works in
/// a database of its own (``makeDatabase()``). A test that restarts its server starts one of its
/// own. The server binaries are looked up in `PG_BIN`, then `/usr/lib/postgresql/<version>/bin`
/// (newest first), Homebrew's folders and `PATH`; when there are none the tests fail, saying
/// what to install.
final class PostgreSQLServer: Sendable {
    /// The superuser's password, for connections over TCP (Unix sockets are trusted).
    static let password = "store-migrations-test"
    static let user = "postgres"

    let folder: URL
    let dataDirectory: URL
    let socketDirectory: URL
    let port: Int
    let binaries: URL
    /// The user the server runs as when the tests run as root, else `nil`.
    let serverUser: String?

    /// The server the PostgreSQL suites of this process share, started on first use.
    static let shared: Result<PostgreSQLServer, ServerFailure> = {
        do {
            let server = try PostgreSQLServer()
            atexit { if case .success(let server) = PostgreSQLServer.shared { server.stop() } }
            return .success(server)
        } catch let failure as ServerFailure {
            return .failure(failure)
        } catch {
            return .failure(ServerFailure(description: "\(error)"))
        }
    }()

    /// The shared server, or the reason it could not start.
    static func start() throws -> PostgreSQLServer { try shared.get() }

    struct ServerFailure: Error, CustomStringConvertible {
        let description: String
    }

    /// Starts a new server; ``stop()`` it when done.
    init() throws {
        binaries = try Self.findBinaries()
        serverUser = geteuid() == 0 ? Self.user : nil
        folder = URL(fileURLWithPath: "/tmp", isDirectory: true).appendingPathComponent("sm-pg-\(UUID().uuidString.prefix(8))")
        dataDirectory = folder.appendingPathComponent("data")
        socketDirectory = folder
        port = try Self.freePort()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let passwordFile = folder.appendingPathComponent("password")
        try Data(Self.password.utf8).write(to: passwordFile)
        if let serverUser {
            guard let account = getpwnam(serverUser) else {
                throw ServerFailure(description: "the tests run as root, and PostgreSQL refuses to: they need a user \"\(serverUser)\" to run the server as (apt-get install postgresql creates it)")
            }
            for path in [folder.path, passwordFile.path] { chown(path, account.pointee.pw_uid, account.pointee.pw_gid) }
        }
        try run("initdb", [
            "-D", dataDirectory.path, "-U", Self.user, "--pwfile", passwordFile.path, "--auth-local=trust",
            "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync", "--locale=C",
        ])
        try start()
    }

    /// Starts the server on its data folder.
    func start() throws {
        try run("pg_ctl", [
            "-D", dataDirectory.path, "-l", folder.appendingPathComponent("server.log").path, "-w", "-t", "30",
            "-o", "-k \(socketDirectory.path) -p \(port) -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c deadlock_timeout=200ms",
            "start",
        ])
    }

    /// `pg_ctl restart -m fast`: every session is terminated, committed data stays.
    func restart() throws {
        try run("pg_ctl", [
            "-D", dataDirectory.path, "-l", folder.appendingPathComponent("server.log").path, "-w", "-t", "30", "-m", "fast",
            "-o", "-k \(socketDirectory.path) -p \(port) -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c deadlock_timeout=200ms",
            "restart",
        ])
    }

    /// Stops the server at once and removes its folder.
    func stop() {
        _ = try? run("pg_ctl", ["-D", dataDirectory.path, "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(at: folder)
    }

    /// A connection string over the Unix socket (trusted) to `database`.
    func connectionString(database: String) -> String {
        "host=\(socketDirectory.path) port=\(port) user=\(Self.user) dbname=\(database)"
    }

    /// A connection string over TCP on the loopback interface, with a password.
    func tcpConnectionString(database: String, password: String = PostgreSQLServer.password) -> String {
        "host=127.0.0.1 port=\(port) user=\(Self.user) password=\(password) dbname=\(database)"
    }

    /// A connection for the tests' own queries.
    func connect(database: String = "postgres") throws -> PostgreSQLConnection {
        try PostgreSQLConnection(
            parameters: [("host", socketDirectory.path), ("port", String(port)), ("user", Self.user), ("dbname", database)],
            store: "test connection to \(database)")
    }

    /// Creates an empty database of a fresh name and returns its name.
    func makeDatabase() throws -> String {
        let name = "test_\(UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: "_"))"
        try connect().execute("CREATE DATABASE \(name)")
        return name
    }

    /// Runs one of the server's programs (as the server's user when the tests run as root), at
    /// most 60 seconds. Started with `posix_spawn` and reaped with `waitpid` (``ChildProcess``),
    /// its output in files: the server `pg_ctl start` leaves running keeps its parent's
    /// descriptors, so a pipe would never reach its end.
    @discardableResult
    func run(_ tool: String, _ arguments: [String]) throws -> String {
        let executable = binaries.appendingPathComponent(tool).path
        let child = serverUser == nil
            ? try ChildProcess(executable: URL(fileURLWithPath: executable), arguments: arguments, logs: folder)
            : try ChildProcess(
                executable: URL(fileURLWithPath: "/usr/sbin/runuser"), arguments: ["-u", serverUser!, "--", executable] + arguments,
                logs: folder)
        guard let exit = child.wait(timeout: 60) else {
            child.kill()
            throw ServerFailure(description: "\(tool) \(arguments.joined(separator: " ")) ran past 60 s")
        }
        guard exit.succeeded else {
            throw ServerFailure(description: "\(tool) \(arguments.joined(separator: " ")) failed: \(exit)")
        }
        return exit.standardOutput + exit.standardError
    }

    private static func findBinaries() throws -> URL {
        var candidates: [String] = []
        if let bin = ProcessInfo.processInfo.environment["PG_BIN"] { candidates.append(bin) }
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        candidates += versions.sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }.map { "/usr/lib/postgresql/\($0)/bin" }
        candidates += ["/opt/homebrew/bin", "/usr/local/bin", "/opt/homebrew/opt/postgresql/bin"]
        candidates += (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        for folder in candidates where FileManager.default.isExecutableFile(atPath: folder + "/initdb")
            && FileManager.default.isExecutableFile(atPath: folder + "/pg_ctl")
        {
            return URL(fileURLWithPath: folder, isDirectory: true)
        }
        throw ServerFailure(description:
            "The PostgreSQL tests start a server of their own, and no PostgreSQL server binaries (initdb, pg_ctl) were found "
            + "in PG_BIN, /usr/lib/postgresql/*/bin, Homebrew's folders or PATH. Install them: `apt-get install postgresql "
            + "libpq-dev` (Debian, Ubuntu) or `brew install postgresql libpq` (macOS), or point PG_BIN at their folder.")
    }

    /// A loopback port nothing listens on right now.
    static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ServerFailure(description: "socket() failed: errno \(errno)") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(descriptor, socketAddress, length) == 0 && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        guard bound else { throw ServerFailure(description: "could not find a free loopback port: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// The `ReplicaRunner` executable that `swift test` builds beside the test bundle.
struct ReplicaRunnerExecutable {
    let url: URL

    init() throws {
        var candidates: [URL] = []
        if let path = ProcessInfo.processInfo.environment["REPLICA_RUNNER"] { candidates.append(URL(fileURLWithPath: path)) }
        for start in [Bundle.main.executableURL, Bundle.main.bundleURL] + Bundle.allBundles.map(\.bundleURL) {
            var folder = start?.deletingLastPathComponent()
            for _ in 0..<4 {
                guard let current = folder else { break }
                candidates.append(current.appendingPathComponent("ReplicaRunner"))
                folder = current.deletingLastPathComponent()
            }
        }
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw ProcessTestFailure("ReplicaRunner was not found beside the test bundle; build it with `swift build --build-tests`")
        }
        url = found
    }

    func start(_ arguments: [String], logs: URL) throws -> ChildProcess {
        try ChildProcess(executable: url, arguments: arguments, logs: logs)
    }
}
#endif
