import Foundation
import StoreMigrations
#if canImport(CLibPQ)
import CLibPQ
#endif

/// `PostgreSQLStore` against raw libpq doing the same work, on a throwaway server this workload
/// starts (initdb into a temporary folder, a Unix socket, run as `postgres` when root):
/// - 1,000 no-op steps, each its own transaction with the advisory lock, the records read
///   after it and written back, against a raw loop of the same statements;
/// - an up-to-date launch with 100 applied migrations (`run()` from a new coordinator, which
///   connects and reads the records) against connecting and reading the level by hand;
/// - a row transform of every row of a table (keyset batches of 1,000, one prepared `UPDATE`
///   per row) against a raw libpq loop of the same batches and updates.
struct PostgreSQLWorkload {
    let rows: Int
    let steps: Int
    let timer: Timer
    let launchTimer: Timer

    init(rows: Int, quick: Bool, timer: Timer, launchTimer: Timer) {
        self.rows = rows
        steps = quick ? 50 : 1_000
        self.timer = timer
        self.launchTimer = launchTimer
    }

    func run() throws -> [Measurement] {
        #if canImport(CLibPQ)
        let server = try BenchmarkServer()
        defer { server.stop() }
        return [try noOpSteps(server), try upToDateLaunch(server), try rowTransform(server)]
        #else
        return []
        #endif
    }
}

#if canImport(CLibPQ)
extension PostgreSQLWorkload {
    private func noOpSteps(_ server: BenchmarkServer) throws -> Measurement {
        let connection = server.connectionString
        var run = 0
        let raw = try RawPQ(connection)
        let key = try PostgreSQLStore(connection).lockKey
        let (library, baseline) = try timer.compare(
            prepareLibrary: { run += 1 },
            library: {
                let coordinator = MigrationCoordinator(appVersion: Version(steps))
                let manager = try coordinator.manager("noop", store: PostgreSQLStore(connection, schema: "library_\(run)"))
                for version in 1...steps { manager.register(Version(version)) { _ in } }
                let report = try coordinator.run()
                precondition(report.steps.count == steps && report.succeeded)
            },
            prepareBaseline: {
                try raw.execute("""
                    CREATE SCHEMA raw_\(run);
                    CREATE TABLE raw_\(run).levels(manager text PRIMARY KEY, level text);
                    CREATE TABLE raw_\(run).history(id bigserial PRIMARY KEY, manager text, version text, applied_at timestamptz, duration_seconds float8)
                    """)
            },
            baseline: {
                for version in 1...steps {
                    try raw.execute("BEGIN; SELECT pg_advisory_xact_lock(\(key))")
                    _ = try raw.rows("SELECT manager, level FROM raw_\(run).levels; SELECT manager, version FROM raw_\(run).history")
                    try raw.execute("""
                        INSERT INTO raw_\(run).levels VALUES ('noop', '\(version)')
                        ON CONFLICT (manager) DO UPDATE SET level = excluded.level
                        """)
                    try raw.execute("INSERT INTO raw_\(run).history(manager, version, applied_at, duration_seconds) VALUES ('noop', '\(version)', now(), 0)")
                    try raw.execute("COMMIT")
                }
            })
        return Measurement(
            workload: "PostgreSQL: \(steps) no-op steps", metric: "run() vs the same statements by hand (lock, read, write, commit)",
            runs: timer.runs, libraryMedian: library.median, baselineMedian: baseline.median, target: "(reported)")
    }

    private func upToDateLaunch(_ server: BenchmarkServer) throws -> Measurement {
        let connection = server.connectionString
        func coordinator() throws -> MigrationCoordinator {
            let coordinator = MigrationCoordinator(appVersion: 100)
            let manager = try coordinator.manager("service", store: PostgreSQLStore(connection, schema: "launch"))
            for version in 1...100 { manager.register(Version(version)) { _ in } }
            return coordinator
        }
        let first = try coordinator().run()
        precondition(first.steps.count == 100)
        var level: String?
        let (library, baseline) = try launchTimer.compare(
            library: {
                let report = try coordinator().run()
                precondition(report.steps.isEmpty)
            },
            baseline: {
                let raw = try RawPQ(connection)
                level = try raw.rows("SELECT level FROM launch.store_migrations_levels WHERE manager = 'service'").first?.first ?? nil
            })
        precondition(level == "100", "level read by hand: \(level ?? "none")")
        return Measurement(
            workload: "PostgreSQL: up-to-date launch (100 applied)", metric: "run() from a new coordinator vs connecting and reading the level",
            runs: launchTimer.runs, libraryMedian: library.median, baselineMedian: baseline.median, target: "≤ 1.5×")
    }

    private func rowTransform(_ server: BenchmarkServer) throws -> Measurement {
        let connection = server.connectionString
        let raw = try RawPQ(connection)
        try raw.execute("""
            CREATE TABLE big(id bigint PRIMARY KEY, name text NOT NULL, tag text);
            INSERT INTO big SELECT i, md5(i::text), NULL FROM generate_series(1, \(rows)) AS i
            """)
        try raw.execute("VACUUM ANALYZE big")
        var run = 0
        let (library, baseline) = try timer.compare(
            prepareLibrary: { run += 1 },
            library: {
                let coordinator = MigrationCoordinator(appVersion: 1)
                let tag = "library-\(run)"
                try coordinator.manager("transform-\(run)", store: PostgreSQLStore(connection, schema: "transform"))
                    .register(1) { db in
                        let written = try db.transformRows(in: "big", columns: ["name", "tag"]) { row in
                            let name: String = try row[1]
                            return ["tag": .text(tag + name.prefix(4))]
                        }
                        precondition(written == rows)
                    }
                let report = try coordinator.run()
                precondition(report.succeeded)
            },
            prepareBaseline: { run += 1 },
            baseline: {
                let tag = "raw-\(run)"
                try raw.execute("BEGIN")
                try raw.prepare("first", "SELECT id, name, tag FROM big ORDER BY id LIMIT 1000")
                try raw.prepare("next", "SELECT id, name, tag FROM big WHERE id > $1 ORDER BY id LIMIT 1000")
                try raw.prepare("update", "UPDATE big SET name = $1, tag = $2 WHERE id = $3")
                var last: String?
                var written = 0
                repeat {
                    let batch = try raw.executePrepared(last == nil ? "first" : "next", last.map { [$0] } ?? [])
                    defer { PQclear(batch) }
                    let count = PQntuples(batch)
                    for row in 0..<count {
                        let id = String(cString: PQgetvalue(batch, row, 0))
                        let name = String(cString: PQgetvalue(batch, row, 1))
                        PQclear(try raw.executePrepared("update", [name, tag + name.prefix(4), id]))
                        written += 1
                    }
                    last = count == 1_000 ? String(cString: PQgetvalue(batch, count - 1, 0)) : nil
                } while last != nil
                precondition(written == rows)
                try raw.execute("COMMIT; DEALLOCATE ALL")
            })
        return Measurement(
            workload: "PostgreSQL: transform \(rows) rows", metric: "transformRows vs a raw libpq keyset loop with a prepared UPDATE",
            runs: timer.runs, libraryMedian: library.median, baselineMedian: baseline.median, target: "≤ 1.10×")
    }
}

/// A raw libpq connection: what the baselines use.
private final class RawPQ {
    let handle: OpaquePointer

    init(_ connectionString: String) throws {
        guard let handle = PQconnectdb(connectionString), PQstatus(handle) == CONNECTION_OK else {
            throw BenchmarkFailure("could not connect: \(connectionString)")
        }
        self.handle = handle
    }

    deinit { PQfinish(handle) }

    func execute(_ sql: String) throws {
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            throw BenchmarkFailure("\(sql): \(String(cString: PQerrorMessage(handle)))")
        }
    }

    /// The rows of the last statement of `sql`, as text.
    func rows(_ sql: String) throws -> [[String?]] {
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_TUPLES_OK else { throw BenchmarkFailure("\(sql): \(String(cString: PQerrorMessage(handle)))") }
        return (0..<PQntuples(result)).map { row in
            (0..<PQnfields(result)).map { column in
                PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column))
            }
        }
    }

    func prepare(_ name: String, _ sql: String) throws {
        let result = PQprepare(handle, name, sql, 0, nil)
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else { throw BenchmarkFailure("\(sql): \(String(cString: PQerrorMessage(handle)))") }
    }

    /// The result, for the caller to clear.
    func executePrepared(_ name: String, _ parameters: [String]) throws -> OpaquePointer? {
        let copies = parameters.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let values = copies.map { UnsafePointer($0) }
        let result = values.withUnsafeBufferPointer { PQexecPrepared(handle, name, Int32(parameters.count), $0.baseAddress, nil, nil, 0) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            PQclear(result)
            throw BenchmarkFailure("\(name): \(String(cString: PQerrorMessage(handle)))")
        }
        return result
    }
}

/// A throwaway server: initdb into a temporary folder, a Unix socket, fsync off.
private final class BenchmarkServer {
    let folder: URL
    private let binaries: String
    private let serverUser: String?

    var connectionString: String { "host=\(folder.path) port=5432 user=postgres dbname=postgres" }

    init() throws {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        let candidates = [ProcessInfo.processInfo.environment["PG_BIN"]].compactMap { $0 }
            + versions.sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }.map { "/usr/lib/postgresql/\($0)/bin" }
            + ["/opt/homebrew/bin", "/usr/local/bin"]
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0 + "/initdb") }) else {
            throw BenchmarkFailure("no PostgreSQL server binaries: install postgresql, or set PG_BIN")
        }
        binaries = found
        serverUser = geteuid() == 0 ? "postgres" : nil
        folder = URL(fileURLWithPath: "/tmp").appendingPathComponent("sm-bench-pg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        if let serverUser, let account = getpwnam(serverUser) {
            chown(folder.path, account.pointee.pw_uid, account.pointee.pw_gid)
        }
        let data = folder.appendingPathComponent("data").path
        try run("initdb", ["-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync", "--locale=C"])
        try run("pg_ctl", [
            "-D", data, "-l", folder.appendingPathComponent("server.log").path, "-w",
            "-o", "-k \(folder.path) -p 5432 -c listen_addresses= -c fsync=off -c synchronous_commit=off", "start",
        ])
    }

    func stop() {
        try? run("pg_ctl", ["-D", folder.appendingPathComponent("data").path, "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(at: folder)
    }

    /// Spawned and reaped by hand: the server `pg_ctl start` leaves running inherits what
    /// `Process` watches for its child's end.
    private func run(_ tool: String, _ arguments: [String]) throws {
        let executable = binaries + "/" + tool
        let argv = (serverUser.map { ["/usr/sbin/runuser", "-u", $0, "--", executable] } ?? [executable]) + arguments
        let log = folder.appendingPathComponent("\(tool).out").path
        #if canImport(Darwin)
        var actions: posix_spawn_file_actions_t?
        #else
        var actions = posix_spawn_file_actions_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let cArguments = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, argv[0], &actions, nil, cArguments, environ) == 0 else { throw BenchmarkFailure("could not start \(tool)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        guard status == 0 else { throw BenchmarkFailure("\(tool) failed: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")") }
    }
}

private struct BenchmarkFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
#endif
