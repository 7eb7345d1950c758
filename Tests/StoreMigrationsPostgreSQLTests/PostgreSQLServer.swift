import Foundation
import Testing
import ThrowawayPostgreSQL
@testable import StoreMigrations
@testable import StoreMigrationsPostgreSQL
import TestSupport

/// The tests' PostgreSQL server: a ``ThrowawayPostgreSQLServer`` listening on its Unix socket
/// and on a free loopback port (with ``password``), stopped when the test process exits.
///
/// One server, ``shared``, serves every PostgreSQL suite of a test process; each test works in
/// a database of its own (``makeDatabase()``). A test that restarts its server starts one of its
/// own (`PostgreSQLServer()`). When there are no server binaries the tests fail, saying what to
/// install.
typealias PostgreSQLServer = ThrowawayPostgreSQLServer

extension ThrowawayPostgreSQLServer {
    /// The superuser's password, for connections over TCP (Unix sockets are trusted).
    static let password = "store-migrations-test"
    static let user = superuser

    /// The server the PostgreSQL suites of this process share, started on first use.
    static let shared: Result<PostgreSQLServer, ThrowawayPostgreSQLError> = {
        do {
            let server = try PostgreSQLServer()
            atexit { if case .success(let server) = PostgreSQLServer.shared { server.stop() } }
            return .success(server)
        } catch let failure as ThrowawayPostgreSQLError {
            return .failure(failure)
        } catch {
            return .failure(ThrowawayPostgreSQLError("\(error)"))
        }
    }()

    /// The shared server, or the reason it could not start.
    static func start() throws -> PostgreSQLServer { try shared.get() }

    /// Starts a new server set up as the tests need it; ``stop()`` it when done: room for the
    /// connections of suites running in parallel and of the replica tests' processes, and a
    /// lock wait that checks for a deadlock after 200 ms rather than the default second.
    convenience init() throws {
        try self.init(.init(
            folderPrefix: "sm-pg", loopbackPassword: Self.password,
            settings: ["max_connections=200", "deadlock_timeout=200ms"]))
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
