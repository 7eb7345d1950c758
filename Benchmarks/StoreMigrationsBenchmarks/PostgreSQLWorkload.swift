import Foundation
import StoreMigrations
import StoreMigrationsPostgreSQL
import StoreMigrationsSQLite
#if canImport(CLibPQ)
import CLibPQ
import ThrowawayPostgreSQL
#endif

/// `PostgreSQLStore` against raw libpq doing the same work, on a throwaway server this workload
/// starts (Unix socket, durability and autovacuum off; see ``ThrowawayPostgreSQLServer``). Its
/// parts, each with a name of its own for `--only`:
/// - `postgresql-steps`: 1,000 no-op steps, each its own transaction with the advisory lock,
///   the records read after it and written back, against a raw loop of the same statements;
/// - `postgresql-launch`: an up-to-date launch with 100 applied migrations (`run()` from a new
///   coordinator, which connects and reads the records) against connecting and reading the
///   level by hand;
/// - `postgresql-replicas`: the same launch by 8 replicas at once (8 threads of this process,
///   each with its own coordinator and connection) against 8 threads each connecting and
///   reading the level by hand;
/// - `postgresql-uptodate`: `plan().isUpToDate` of the launch's service, the first call on a
///   connection just opened and a later one, against the same statements over raw libpq (see
///   `PostgreSQLUpToDateCheck.swift`);
/// - `postgresql-transform`: a row transform of every row of a table (1,000,000 at full size;
///   keyset batches of 1,000, one prepared `UPDATE` per row) against a raw libpq loop of the
///   same batches and updates, each side in a new session; timed, and its CPU time counted
///   (this process and the session's server process, from `/proc`, on Linux);
/// - `postgresql-batched`: the same number of rows rewritten by a resumable step through the
///   core `registerResumable` (batch size `.automatic`; each batch its own transaction under the
///   store's advisory lock, committing the cursor with the rows), whose body uses the
///   connection directly, against a raw libpq loop of the same updates with the same commits:
///   the baseline replays the batch sizes of the library's run before it;
/// - `postgresql-watch`: what watching steps for table-lock waits costs, against steps run
///   without lock retries (see `PostgreSQLWatchCost.swift`).
struct PostgreSQLWorkload {
    static let parts = [
        "postgresql-steps", "postgresql-launch", "postgresql-replicas", "postgresql-uptodate", "postgresql-transform",
        "postgresql-batched", "postgresql-watch",
    ]

    let parts: Set<String>
    let rows: Int
    let steps: Int
    let replicas = 8
    let timer: Timer
    let launchTimer: Timer
    /// More runs than the other parts at full size: a transform takes half a minute, long
    /// enough for the machine's other work to come and go within one side's run.
    let transformTimer: Timer

    init(parts: Set<String>, rows: Int, quick: Bool, timer: Timer, launchTimer: Timer, transformTimer: Timer) {
        self.parts = parts
        self.rows = rows
        steps = quick ? 50 : 1_000
        self.timer = timer
        self.launchTimer = launchTimer
        self.transformTimer = transformTimer
    }

    func run() throws -> [Measurement] {
        #if canImport(CLibPQ)
        // Autovacuum off: the transform's runs each leave a table's worth of dead rows, which
        // each side's preparation vacuums outside the timing, rather than autovacuum in the
        // middle of one side's run.
        let server = try ThrowawayPostgreSQLServer(.init(folderPrefix: "sm-bench-pg", settings: ["autovacuum=off"]))
        defer { server.stop() }
        let connection = server.connectionString(database: "postgres")
        var results: [Measurement] = []
        if parts.contains("postgresql-steps") { results.append(try noOpSteps(connection)) }
        if parts.contains("postgresql-launch") || parts.contains("postgresql-replicas") || parts.contains("postgresql-uptodate") {
            let first = try Self.launchCoordinator(connection).run()
            precondition(first.steps.count == 100)
            if parts.contains("postgresql-launch") { results.append(try upToDateLaunch(connection)) }
            if parts.contains("postgresql-replicas") { results.append(try replicasStartup(connection)) }
            if parts.contains("postgresql-uptodate") { results += try upToDateCheck(connection) }
        }
        if parts.contains("postgresql-transform") { results += try rowTransform(connection) }
        if parts.contains("postgresql-batched") { results += try batchedTransform(connection) }
        if parts.contains("postgresql-watch") { results += try watchCost(connection) }
        return results
        #else
        return []
        #endif
    }
}

#if canImport(CLibPQ)
extension PostgreSQLWorkload {
    private func noOpSteps(_ connection: String) throws -> Measurement {
        var run = 0
        let raw = try RawLibPQ(connection)
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

    /// The service of the launch measurements: 100 migrations in schema `launch`.
    static func launchCoordinator(_ connection: String, store: PostgreSQLStore? = nil) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: 100)
        let manager = try coordinator.manager("service", store: store ?? PostgreSQLStore(connection, schema: "launch"))
        for version in 1...100 { manager.register(Version(version)) { _ in } }
        return coordinator
    }

    /// What a replica of the launch's service checks at startup, in the library's way.
    private static func launchFindingNothingToDo(_ connection: String) throws {
        let report = try launchCoordinator(connection).run()
        precondition(report.steps.isEmpty)
    }

    /// The baseline's launch: connect and read the level.
    private static func readLevelByHand(_ connection: String) throws {
        let level = try RawLibPQ(connection).rows("SELECT level FROM launch.store_migrations_levels WHERE manager = 'service'")
        precondition(level.first?.first == "100", "level read by hand: \(level)")
    }

    private func upToDateLaunch(_ connection: String) throws -> Measurement {
        let (library, baseline) = try launchTimer.compare(
            library: { try Self.launchFindingNothingToDo(connection) },
            baseline: { try Self.readLevelByHand(connection) })
        return Measurement(
            workload: "PostgreSQL: up-to-date launch (100 applied)", metric: "run() from a new coordinator vs connecting and reading the level",
            runs: launchTimer.runs, libraryMedian: library.median, baselineMedian: baseline.median, target: "≤ 1.5×")
    }

    private func replicasStartup(_ connection: String) throws -> Measurement {
        let threads = ReplicaThreads(count: replicas)
        defer { threads.stop() }
        let (library, baseline) = try launchTimer.compare(
            library: { try threads.run { _ in try Self.launchFindingNothingToDo(connection) } },
            baseline: { try threads.run { _ in try Self.readLevelByHand(connection) } })
        return Measurement(
            workload: "PostgreSQL: \(replicas) replicas' up-to-date launch (100 applied)",
            metric: "\(replicas) threads, each run() from a new coordinator, vs each connecting and reading the level",
            runs: launchTimer.runs, libraryMedian: library.median, baselineMedian: baseline.median, target: "≤ 1.5× (as one launch)")
    }

    /// The transform's time, and its CPU time (this process and the server process serving the
    /// side's connection), which other work on the machine inflates less than the time.
    private func rowTransform(_ connection: String) throws -> [Measurement] {
        let raw = try RawLibPQ(connection)
        try raw.execute("""
            CREATE TABLE big(id bigint PRIMARY KEY, name text NOT NULL, tag text);
            INSERT INTO big SELECT i, md5(i::text), NULL FROM generate_series(1, \(rows)) AS i
            """)
        // Each side starts from the same table: the previous run's dead rows vacuumed and its
        // dirty pages written, outside the timing.
        func settle() throws {
            try raw.execute("VACUUM ANALYZE big")
            try raw.execute("CHECKPOINT")
        }
        var run = 0
        var libraryCPU: [Double] = [], baselineCPU: [Double] = []
        let (library, baseline) = try transformTimer.compare(
            prepareLibrary: {
                run += 1
                try settle()
            },
            library: {
                let clientBefore = CPUTime.seconds(ofProcess: getpid())
                let coordinator = MigrationCoordinator(appVersion: 1)
                // Tags of one length on both sides: a longer row version than the one it
                // replaces fits its page less often, and an update that moves to another page
                // costs an index entry too.
                let tag = String(format: "lib-%03d", run)
                let store = try PostgreSQLStore(connection, schema: "transform")
                try coordinator.manager("transform-\(run)", store: store)
                    .register(1) { db in
                        let written = try db.transformRows(in: "big", columns: ["name", "tag"]) { row in
                            let name: String = try row[1]
                            return ["tag": .text(tag + name.prefix(4))]
                        }
                        precondition(written == rows)
                    }
                let report = try coordinator.run()
                precondition(report.succeeded)
                // The store's connection is still open, its server process alive: all of that
                // process's CPU time went to this run (connecting, the records, the step).
                let serverProcess = try store.read { $0.serverProcessID }
                libraryCPU.append(CPUTime.seconds(ofProcess: getpid()) - clientBefore + CPUTime.seconds(ofProcess: serverProcess))
            },
            prepareBaseline: {
                run += 1
                try settle()
            },
            baseline: {
                // A session of its own, as the library's run has: a new server process, whose
                // CPU time all goes to this run.
                let clientBefore = CPUTime.seconds(ofProcess: getpid())
                let session = try RawLibPQ(connection)
                defer {
                    baselineCPU.append(
                        CPUTime.seconds(ofProcess: getpid()) - clientBefore + CPUTime.seconds(ofProcess: PQbackendPID(session.handle)))
                }
                let tag = String(format: "raw-%03d", run)
                try session.execute("BEGIN")
                try session.prepare("first", "SELECT id, name, tag FROM big ORDER BY id LIMIT 1000")
                try session.prepare("next", "SELECT id, name, tag FROM big WHERE id > $1 ORDER BY id LIMIT 1000")
                try session.prepare("update", "UPDATE big SET name = $1, tag = $2 WHERE id = $3")
                var last: String?
                var written = 0
                repeat {
                    let batch = try session.executePrepared(last == nil ? "first" : "next", last.map { [$0] } ?? [])
                    defer { PQclear(batch) }
                    let count = PQntuples(batch)
                    for row in 0..<count {
                        let id = String(cString: PQgetvalue(batch, row, 0))
                        let name = String(cString: PQgetvalue(batch, row, 1))
                        PQclear(try session.executePrepared("update", [name, tag + name.prefix(4), id]))
                        written += 1
                    }
                    last = count == 1_000 ? String(cString: PQgetvalue(batch, count - 1, 0)) : nil
                } while last != nil
                precondition(written == rows)
                try session.execute("COMMIT")
            })
        let tagged = try raw.rows("SELECT count(*) FROM big WHERE tag LIKE 'raw-%'")
        precondition(tagged.first?.first == String(rows), "rows tagged by the last run: \(tagged)")
        var results = [Measurement(
            workload: "PostgreSQL: transform \(rows) rows", metric: "transformRows vs a raw libpq keyset loop with a prepared UPDATE",
            runs: transformTimer.runs, libraryMedian: library.median, baselineMedian: baseline.median, target: "≤ 1.10×")]
        if CPUTime.isAvailable {
            results.append(Measurement(
                workload: "PostgreSQL: transform \(rows) rows", metric: "CPU time: this process + the connection's server process",
                runs: transformTimer.runs, libraryMedian: CPUTime.median(libraryCPU), baselineMedian: CPUTime.median(baselineCPU),
                target: "(reported)"))
        }
        return results
    }
}

extension PostgreSQLWorkload {
    /// The resumable transform against the raw loop with the same commits; time and CPU time, as
    /// for the single-transaction transform.
    private func batchedTransform(_ connection: String) throws -> [Measurement] {
        let raw = try RawLibPQ(connection)
        try raw.execute("""
            CREATE TABLE batched(id bigint PRIMARY KEY, name text NOT NULL, tag text);
            INSERT INTO batched SELECT i, md5(i::text), NULL FROM generate_series(1, \(rows)) AS i
            """)
        func settle() throws {
            try raw.execute("VACUUM ANALYZE batched")
            try raw.execute("CHECKPOINT")
        }
        let select = "SELECT id, name FROM batched WHERE id > $1 ORDER BY id LIMIT $2"
        let update = "UPDATE batched SET tag = $1 WHERE id = $2"
        var run = 0
        // The limits the library's batches asked for, in its last run: what the baseline replays.
        var limits: [Int] = []
        var batchCounts: [Int] = []
        var libraryCPU: [Double] = [], baselineCPU: [Double] = []
        let (library, baseline) = try transformTimer.compare(
            prepareLibrary: {
                run += 1
                try settle()
            },
            library: {
                let clientBefore = CPUTime.seconds(ofProcess: getpid())
                let coordinator = MigrationCoordinator(appVersion: 1)
                // Tags of one length on both sides, as in the single-transaction transform.
                let tag = String(format: "lib-%03d", run)
                let asked = LimitLog()
                let store = try PostgreSQLStore(connection, schema: "batched")
                try coordinator.manager("batched-\(run)", store: store).registerResumable(1, batchSize: .automatic) { db, batch in
                    asked.append(batch.limit)
                    let after = batch.cursor.flatMap(Int64.init) ?? 0
                    let selected = try db.prepare(select).rows(arguments: [.integer(after), .integer(Int64(batch.limit))])
                    let write = try db.prepare(update)
                    for row in selected {
                        let name: String = try row[1]
                        try write.execute(arguments: [.text(tag + name.prefix(4)), row.values[0]])
                    }
                    guard selected.count == batch.limit, let last = selected.last else { return .finished(processed: selected.count) }
                    return .more(cursor: String(try last[0] as Int64), processed: selected.count)
                }
                let report = try coordinator.run()
                precondition(report.succeeded && report.didRunAnything)
                limits = asked.limits
                batchCounts.append(limits.count)
                let serverProcess = try store.read { $0.serverProcessID }
                libraryCPU.append(CPUTime.seconds(ofProcess: getpid()) - clientBefore + CPUTime.seconds(ofProcess: serverProcess))
            },
            prepareBaseline: {
                run += 1
                try settle()
            },
            baseline: {
                let clientBefore = CPUTime.seconds(ofProcess: getpid())
                let session = try RawLibPQ(connection)
                defer {
                    baselineCPU.append(
                        CPUTime.seconds(ofProcess: getpid()) - clientBefore + CPUTime.seconds(ofProcess: PQbackendPID(session.handle)))
                }
                let tag = String(format: "raw-%03d", run)
                try session.prepare("select", select)
                try session.prepare("update", update)
                var last = "0"
                var written = 0
                for limit in limits {
                    try session.execute("BEGIN")
                    let batch = try session.executePrepared("select", [last, String(limit)])
                    defer { PQclear(batch) }
                    let count = PQntuples(batch)
                    for row in 0..<count {
                        let id = String(cString: PQgetvalue(batch, row, 0))
                        let name = String(cString: PQgetvalue(batch, row, 1))
                        PQclear(try session.executePrepared("update", [tag + name.prefix(4), id]))
                    }
                    written += Int(count)
                    if count > 0 { last = String(cString: PQgetvalue(batch, count - 1, 0)) }
                    try session.execute("COMMIT")
                }
                precondition(written == rows, "the replayed batches wrote \(written) rows")
            })
        let tagged = try raw.rows("SELECT count(*) FROM batched WHERE tag LIKE 'raw-%'")
        precondition(tagged.first?.first == String(rows), "rows tagged by the last run: \(tagged)")
        let workload = "PostgreSQL: batched transform \(rows) rows"
        var results = [Measurement(
            workload: workload, metric: "resumable step (.automatic batches) vs a raw libpq loop with the same commits",
            runs: transformTimer.runs, libraryMedian: library.median, baselineMedian: baseline.median, target: "≤ 1.10×",
            note: "batches per run (warm-up first): \(batchCounts.map(String.init).joined(separator: ", "))")]
        if CPUTime.isAvailable {
            results.append(Measurement(
                workload: workload, metric: "CPU time: this process + the connection's server process",
                runs: transformTimer.runs, libraryMedian: CPUTime.median(libraryCPU), baselineMedian: CPUTime.median(baselineCPU),
                target: "(reported)"))
        }
        return results
    }
}

/// The limits a resumable step's batches were asked for; appended to from the step's thread.
private final class LimitLog: @unchecked Sendable {
    // @unchecked: `asked` is only touched with `lock` held.
    private let lock = NSLock()
    private var asked: [Int] = []

    func append(_ limit: Int) { lock.withLock { asked.append(limit) } }
    var limits: [Int] { lock.withLock { asked } }
}

/// CPU time (user and system) of a process, from Linux's `/proc/<pid>/stat`; the server's
/// processes run as another user, whose `stat` files are readable all the same.
private enum CPUTime {
    static let isAvailable = FileManager.default.fileExists(atPath: "/proc/self/stat")
    private static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// The seconds `pid` has run so far, 0 where `/proc` is missing.
    static func seconds(ofProcess pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let nameEnd = stat.lastIndex(of: ")")
        else { return 0 }
        // After the command name (in parentheses, and free to hold spaces): the state (field 3),
        // then on to utime and stime (fields 14 and 15).
        let fields = stat[stat.index(after: nameEnd)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / ticksPerSecond
    }

    /// The median of the runs after the first, which warms up (as the timings do).
    static func median(_ samples: [Double]) -> Double {
        let timed = samples.count > 1 ? samples.dropFirst().sorted() : samples
        return timed[timed.count / 2]
    }
}
#endif
