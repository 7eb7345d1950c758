import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsPostgreSQL
@testable import ReplicaRunner
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// Replica processes migrating one database at once, killed, waiting on an index build, and a
/// server restarted under them. Serialized: each test starts several processes, and the machine
/// has few cores.
@Suite(.serialized) struct PostgreSQLReplicaTests {
    let runner: ReplicaRunnerExecutable
    let folder: TemporaryFolder

    init() throws {
        runner = try ReplicaRunnerExecutable()
        folder = try TemporaryFolder()
    }

    /// What a `columns` run leaves: `item`'s columns, how often each step logged, the level and the history.
    struct ColumnsSnapshot: Equatable {
        let columns: [String]
        let logCounts: [Int: Int]
        let level: String?
        let history: [String]

        init(_ database: PostgreSQLTestDatabase) throws {
            columns = try database.columns(of: "item")
            var counts: [Int: Int] = [:]
            for row in try database.connect().rows("SELECT step, count(*) FROM step_log GROUP BY step") {
                counts[try row[0] as Int] = try row[1] as Int
            }
            logCounts = counts
            (level, history) = try database.record(of: "service")
        }
    }

    /// A rolling deploy (issue 20): two replicas of app 1.0 and two of app 2.0 started together,
    /// eight times. No 1.0 replica returns success after a step of its own found the database
    /// past 1.0 under the lock; each step runs once; the record ends at app version 2.0; a 1.0
    /// replica launched afterwards is refused and changes no row.
    @Test func oldAndNewReplicasOfARollingDeployRaced() throws {
        var outcomes: [RollingDeployOutcome: Int] = [:]
        for trial in 1...8 {
            let database = try PostgreSQLTestDatabase()
            let gate = folder.file("rolling-gate-\(trial)")
            let apps = ["1.0", "2.0", "1.0", "2.0"]
            let replicas = try apps.map { app in
                try runner.start(
                    ["rolling", database.connectionString, "--app-version", app, "--wait-for", gate.path], logs: folder.url)
            }
            try Data().write(to: gate)
            let exits = replicas.map { $0.wait(timeout: eventWaitBound) ?? $0.kill() }
            for (app, exit) in zip(apps, exits) {
                if app == "2.0" {
                    #expect(exit.succeeded, "trial \(trial): \(exit)")
                } else if let outcome = exit.rollingDeployOutcome(appVersion: "1.0") {
                    outcomes[outcome, default: 0] += 1
                }
            }
            let db = try database.connect()
            var runs: [String: Int] = [:]
            for row in try db.rows("SELECT version, count(*) FROM runs GROUP BY version") {
                runs[try row[0] as String] = try row[1] as Int
            }
            let every = ReplicaScenario.rollingVersions(upTo: "2.0").map(\.description)
            #expect(runs == Dictionary(uniqueKeysWithValues: every.map { ($0, 1) }), "trial \(trial)")
            #expect(try database.record(of: "app").level == "2.0")
            #expect(try db.scalar("SELECT app_version FROM store_migrations_levels WHERE manager = 'app'", as: String.self) == "2.0")

            let before = try rows(of: database)
            let relaunch = try #require(try runner.start(
                ["rolling", database.connectionString, "--app-version", "1.0"], logs: folder.url).wait(timeout: eventWaitBound))
            #expect(relaunch.rollingDeployOutcome(appVersion: "1.0") == .refusedAtPlanning, "trial \(trial)")
            #expect(try rows(of: database) == before, "trial \(trial): the refused relaunch changed no row")
        }
        print("PostgreSQLReplicaTests rolling deploy: app 1.0 replicas \(outcomes)")
    }

    /// Every row of the store's tables and of `runs`, as text, in a stable order.
    func rows(of database: PostgreSQLTestDatabase) throws -> [String] {
        try ["store_migrations_levels", "store_migrations_history", "runs"].map { table in
            try database.connect().scalar("SELECT string_agg(t::text, ';' ORDER BY t::text) FROM \(table) t", as: String.self) ?? ""
        }
    }

    @Test func eightReplicasStartedTogetherApplyEachOfTwentyStepsExactlyOnce() throws {
        let database = try PostgreSQLTestDatabase()
        let gate = folder.file("gate")
        let replicas = try (0..<8).map { _ in
            try runner.start(["columns", database.connectionString, "--steps", "20", "--wait-for", gate.path], logs: folder.url)
        }
        try Data().write(to: gate)
        let exits = replicas.map { $0.wait(timeout: eventWaitBound) ?? $0.kill() }
        for exit in exits { #expect(exit.succeeded, "\(exit)") }
        for exit in exits { #expect(exit.levels == ["level service 20"], "\(exit)") }
        var appliedBy: [String: Int] = [:]
        for exit in exits {
            for (step, outcome) in exit.stepOutcomes {
                #expect(outcome == "applied" || outcome == "alreadyApplied", "\(step): \(outcome)")
                if outcome == "applied" { appliedBy[step, default: 0] += 1 }
            }
        }
        #expect(appliedBy.count == 20)
        #expect(appliedBy.values.allSatisfy { $0 == 1 }, "\(appliedBy)")
        let snapshot = try ColumnsSnapshot(database)
        #expect(snapshot.columns == ["id"] + (1...20).map { "c\($0)" })
        #expect(snapshot.logCounts == Dictionary(uniqueKeysWithValues: (1...20).map { ($0, 1) }))
        #expect(snapshot.level == "20")
        #expect(snapshot.history == (1...20).map(String.init))
        #expect(try database.advisoryLocks() == 0)
    }

    @Test func killingTheLockHolderMidStepLeavesTheDatabaseAsAnUninterruptedRunWould() throws {
        let kills = environmentCount("STORE_MIGRATIONS_PG_KILLS", default: 20)
        let seed = environmentSeed("STORE_MIGRATIONS_PG_SEED")
        var random = SeededGenerator(seed: seed)
        let arguments = ["--steps", "30", "--sleep-ms", "20"]
        let server = try PostgreSQLServer.start()

        let reference = try PostgreSQLTestDatabase(server: server)
        let referenceExit = try #require(try runner.start(["columns", reference.connectionString] + arguments, logs: folder.url).wait(timeout: eventWaitBound))
        try #require(referenceExit.succeeded, "\(referenceExit)")
        let expected = try ColumnsSnapshot(reference)

        var killed = 0, databases = 0
        var slowestRelease: Duration = .zero
        while killed < kills {
            let database = try PostgreSQLTestDatabase(server: server)
            databases += 1
            let admin = try database.connect()
            while killed < kills {
                let replica = try runner.start(["columns", database.connectionString] + arguments, logs: folder.url)
                usleep(UInt32.random(in: 40_000...400_000, using: &random))
                // The lock holder: the server process holding the store's advisory lock, named
                // by its application name `replica-<pid>`.
                var holder: String?
                let lookFor = ContinuousClock.now + .milliseconds(500)
                while holder == nil, ContinuousClock.now < lookFor, replica.wait(timeout: 0) == nil {
                    holder = try admin.scalar(
                        """
                        SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                        WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = $1)
                        """, arguments: [.text(database.name)], as: String.self)
                }
                guard holder == "replica-\(replica.pid)" else {
                    // Finished (the whole run fit in the delay) or not holding the lock yet.
                    if let exit = replica.wait(timeout: eventWaitBound), exit.status != nil {
                        #expect(exit.succeeded, "\(exit)")
                        break
                    }
                    continue
                }
                replica.kill()
                killed += 1
                let killedAt = ContinuousClock.now
                try #require(try waitUntil { try database.advisoryLocks() == 0 }, "seed \(seed): the killed replica's lock outlived it")
                slowestRelease = max(slowestRelease, ContinuousClock.now - killedAt)
            }
            let final = try #require(try runner.start(["columns", database.connectionString] + arguments, logs: folder.url).wait(timeout: eventWaitBound))
            #expect(final.succeeded, "seed \(seed): \(final)")
            #expect(try ColumnsSnapshot(database) == expected, "seed \(seed)")
            #expect(try database.advisoryLocks() == 0)
        }
        // How soon a lock is freed is not asserted here (a loaded machine stretches it): that a
        // lock held through a long statement is freed before the statement ends is the next test.
        print("PostgreSQL kills: \(killed) kills over \(databases) databases, seed \(seed), slowest release \(slowestRelease)")
    }

    @Test func aReplicaKilledDuringALongStatementReleasesTheLockWithinTheLivenessInterval() throws {
        let database = try PostgreSQLTestDatabase()
        // The statement sleeps as long as the tests' outer bound on a wait: the lock can only be
        // freed within that bound if the server noticed the dead client during the statement.
        let sleep = Int(eventWaitBound * 1_000)
        let replica = try runner.start(["columns", database.connectionString, "--steps", "1", "--sleep-ms", "\(sleep)"], logs: folder.url)
        let admin = try database.connect()
        let sleeping = try waitUntil {
            try admin.scalar(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND state = 'active' AND query LIKE 'SELECT pg_sleep%'",
                arguments: [.text("replica-\(replica.pid)")], as: Int.self) != 0 || replica.wait(timeout: 0) != nil
        }
        try #require(sleeping && replica.wait(timeout: 0) == nil, "the replica never reached its long statement")
        #expect(try database.advisoryLocks() == 1)
        replica.kill()
        // The server checks the socket every client_connection_check_interval during a
        // statement; without it the lock would stay until the statement's sleep ended.
        try #require(try waitUntil { try database.advisoryLocks() == 0 }, "the lock outlived its killed holder's statement")
        #expect(try database.tables() == [])
    }

    @Test func createIndexConcurrentlyCompletesWhileFourReplicasWaitForTheLock() throws {
        let database = try PostgreSQLTestDatabase()
        let marker = folder.file("index-build-started")
        let builder = try runner.start(
            ["index-builder", database.connectionString, "--rows", "100000", "--hold-ms", "400", "--marker", marker.path,
             "--lock-timeout", "600"],
            logs: folder.url)
        let started = waitUntil { FileManager.default.fileExists(atPath: marker.path) || builder.wait(timeout: 0) != nil }
        try #require(started && builder.wait(timeout: 0) == nil, "the index builder never reached its step")
        // The waiters wait for the builder's lock as long as a loaded machine makes them.
        let waiters = try (0..<4).map { _ in
            try runner.start(["waiter", database.connectionString, "--lock-timeout", "600"], logs: folder.url)
        }
        let builderExit = builder.wait(timeout: eventWaitBound) ?? builder.kill()
        #expect(builderExit.succeeded, "\(builderExit)")
        #expect(builderExit.stepOutcomes["catalog@2.0"] == "applied")
        let waiterExits = waiters.map { $0.wait(timeout: eventWaitBound) ?? $0.kill() }
        for exit in waiterExits { #expect(exit.succeeded, "\(exit)") }
        #expect(waiterExits.filter { $0.stepOutcomes["audit@2.0"] == "applied" }.count == 1)
        let db = try database.connect()
        #expect(try db.scalar("SELECT indisvalid FROM pg_index WHERE indexrelid = 'product_by_name'::regclass", as: Bool.self) == true)
        #expect(try db.scalar("SELECT count(*) FROM audit_log", as: Int.self) == 1)
        #expect(try database.record(of: "catalog").level == "2.0")
        #expect(try database.record(of: "audit").level == "2.0")
        #expect(try database.advisoryLocks() == 0)
    }

    @Test func aServerRestartFailsTheRunningStepWithATypedErrorAndTheNextRunResumes() async throws {
        let server = try PostgreSQLServer()
        defer { server.stop() }
        let database = try PostgreSQLTestDatabase(server: server)
        let calls = CallCounter()
        func coordinator() throws -> MigrationCoordinator {
            let coordinator = MigrationCoordinator(appVersion: "3")
            let service = try coordinator.manager("service", store: database.store())
            service.register("1") { db in try db.execute("CREATE TABLE t(id int)") }
            service.register("2") { db in
                calls.hit("2")
                try db.execute("ALTER TABLE t ADD COLUMN two int")
                // Ended by the restart below, however late a loaded machine gets there.
                if calls["2"] == 1 { try db.execute("SELECT pg_sleep(600)") }
            }
            service.register("3") { db in try db.execute("ALTER TABLE t ADD COLUMN three int") }
            return coordinator
        }
        let first = try coordinator()
        let running = Task.detached { try await first.run() }
        let admin = try database.connect()
        let sleeping = try waitUntil {
            try admin.scalar("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%'", as: Int.self) != 0
        }
        try #require(sleeping, "step 2 never reached its sleep")
        try server.restart()
        let result = await running.result
        guard case .failure(let error as MigrationRunError) = result else {
            Issue.record("the run did not fail: \(result)")
            return
        }
        let failure = try #require(error.underlyingError as? PostgreSQLError)
        #expect(failure.kind == .connectionLost)
        #expect(failure.sqlState == "57P01", "\(failure)")
        #expect(failure.migration == MigrationReference(manager: "service", version: "2"))
        #expect(try database.record(of: "service").level == "1")
        #expect(try database.columns(of: "t") == ["id"])

        let report = try await coordinator().run()
        #expect(report.steps.map(\.step.id.description) == ["service@2", "service@3"])
        #expect(report.steps.map(\.outcome) == [.applied, .applied])
        #expect(try database.columns(of: "t") == ["id", "two", "three"])
        #expect(try database.record(of: "service").history == ["1", "2", "3"])
    }

    /// What a `batched` database holds, read in one statement (one snapshot): whether the rows
    /// and the record of `service@2` agree.
    struct BatchedState {
        let transformed: Int
        let lastTransformed: Int
        let wrong: Int
        let progress: StepProgress?
        let applied: Bool

        init(_ db: PostgreSQLConnection) throws {
            let row = try #require(try db.rows(
                """
                SELECT (SELECT count(*) FROM item WHERE calls = 1), (SELECT coalesce(max(id), 0) FROM item WHERE calls = 1),
                       (SELECT count(*) FROM item WHERE value <> CASE calls WHEN 0 THEN id WHEN 1 THEN id * 2 + 1 ELSE -1 END),
                       (SELECT progress FROM store_migrations_levels WHERE manager = 'service'),
                       EXISTS (SELECT FROM store_migrations_history WHERE manager = 'service' AND version = '2')
                """).first)
            transformed = try row[0]
            lastTransformed = try row[1]
            wrong = try row[2]
            let progressText: String? = try row[3]
            progress = try progressText.map { try StoredProgress.list(fromJSON: $0) }?.first { $0.version == "2" }
            applied = try row[4]
        }

        /// Why the rows and the record disagree, or `nil` when they agree.
        func disagreement(rows: Int) -> String? {
            if wrong > 0 { return "\(wrong) rows transformed more than once or wrongly" }
            if applied { return transformed == rows && progress == nil ? nil : "applied with \(transformed) rows transformed" }
            let done = progress?.done ?? 0
            guard transformed == done, lastTransformed == done else {
                return "rows 1…\(lastTransformed) (\(transformed)) transformed, the record says \(done)"
            }
            return progress.map { $0.cursor == "[\(done)]" ? nil : "cursor \($0.cursor) after \(done) rows" } ?? nil
        }
    }

    @Test func replicasShareADeferredBatchedStepAndOneKilledMidBatchLeavesItsRowsToTheOthers() throws {
        let rows = 2_000
        let database = try PostgreSQLTestDatabase()
        let gate = folder.file("gate-batched")
        let arguments = [
            "batched", database.connectionString, "--rows", "\(rows)", "--batch-rows", "20", "--row-sleep-us", "500",
            "--wait-for", gate.path,
        ]
        let replicas = try (0..<4).map { _ in try runner.start(arguments, logs: folder.url) }
        try Data().write(to: gate)
        let admin = try database.connect()
        // The victim: the replica holding the store's lock once a quarter of the step is done,
        // that is in a batch of it (its transform sleeps in every row of the batch).
        var victim: ChildProcess?
        var killedAt: BatchedState?
        // An outer bound: the step sleeps about a second in all, in batches of 10 ms.
        let deadline = ContinuousClock.now + .seconds(300)
        while victim == nil {
            try #require(ContinuousClock.now < deadline, "no replica was seen in a batch of the step")
            guard try admin.tableExists("store_migrations_levels"), try admin.tableExists("item") else { continue }
            let state = try BatchedState(admin)
            try #require(!state.applied, "the step finished before a replica could be killed in it")
            guard let done = state.progress?.done, done >= rows / 4 else { continue }
            // The store's lock, not the shared one waiters announce themselves with.
            let key = UInt64(bitPattern: try database.store().lockKey)
            let holder = try admin.scalar(
                """
                SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                WHERE l.locktype = 'advisory' AND l.granted AND l.classid::int8 = $1 AND l.objid::int8 = $2 AND l.objsubid = 1
                  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                """, arguments: [.integer(Int64(key >> 32)), .integer(Int64(key & 0xFFFF_FFFF))], as: String.self)
            guard let replica = replicas.first(where: { holder == "replica-\($0.pid)" }) else { continue }
            let exit = replica.kill()
            try #require(exit.signal != nil, "the replica ended before it was killed: \(exit)")
            victim = replica
            killedAt = try BatchedState(admin)
        }
        #expect(killedAt?.disagreement(rows: rows) == nil, "\(killedAt?.disagreement(rows: rows) ?? "")")
        // The others go on from the last committed batch; the data and the record agree all along.
        var samples = 0
        while replicas.contains(where: { $0 !== victim && $0.wait(timeout: 0) == nil }) {
            try #require(ContinuousClock.now < deadline, "the other replicas did not finish the step")
            let state = try BatchedState(admin)
            if let problem = state.disagreement(rows: rows) { Issue.record("while the others ran: \(problem)") }
            samples += 1
            usleep(20_000)
        }
        let exits = replicas.filter { $0 !== victim }.map { $0.wait(timeout: 60) ?? $0.kill() }
        for exit in exits {
            #expect(exit.succeeded, "\(exit)")
            // The launch's report, then the background run's: the launch did not wait for the
            // deferred step, however busy the other replicas kept the lock with its batches.
            #expect(exit.levels == ["level service 1", "level service 2"], "\(exit)")
            #expect(["applied", "alreadyApplied"].contains(exit.stepOutcomes["service@2"] ?? "none"), "\(exit)")
        }
        // A relaunch (the killed replica's replacement) finds it done.
        let relaunch = try #require(try runner.start(Array(arguments.dropLast(2)), logs: folder.url).wait(timeout: 60))
        #expect(relaunch.succeeded && relaunch.levels == ["level service 2"], "\(relaunch)")
        #expect(relaunch.stepOutcomes["service@2"] == nil, "nothing left to run: \(relaunch)")
        let final = try BatchedState(admin)
        #expect(final.applied && final.transformed == rows && final.wrong == 0, "every row transformed exactly once")
        #expect(try database.record(of: "service").history == ["1", "2"])
        #expect(try database.advisoryLocks() == 0)
        print("Batched replicas: killed one with \(killedAt?.progress?.done ?? 0) of \(rows) rows done, \(samples) samples agreed")
    }

    /// Issue 20: planning asks the catalog before it reads the store's tables, so a first
    /// deployment (eight replicas on an empty database, all planning before any has created the
    /// tables) leaves no `ERROR:` line in the server's log for operators to be alerted by.
    @Test func aFirstDeploymentOfEightReplicasLeavesNoErrorInTheServerLog() throws {
        let server = try PostgreSQLServer()
        defer { server.stop() }
        let database = try PostgreSQLTestDatabase(server: server)
        let gate = folder.file("gate-first-deployment")
        let replicas = try (0..<8).map { _ in
            try runner.start(["columns", database.connectionString, "--steps", "5", "--wait-for", gate.path], logs: folder.url)
        }
        try Data().write(to: gate)
        for exit in replicas.map({ $0.wait(timeout: 120) ?? $0.kill() }) { #expect(exit.succeeded, "\(exit)") }
        #expect(try database.record(of: "service").history == ["1", "2", "3", "4", "5"])
        let log = try String(contentsOf: server.logFile, encoding: .utf8)
        #expect(log.contains("database system is ready to accept connections"), "not the server's log: \(log)")
        let errors = log.split(separator: "\n").filter { $0.contains("ERROR:") }
        #expect(errors.isEmpty, "\(errors.joined(separator: "\n"))")
    }

    /// Planning on an older release's levels table, which has no `progress` column, reads its
    /// records without asking `pg_attribute` first (issue 20, item 4) and still leaves no
    /// `ERROR:` line in the server's log.
    @Test func planningAnOlderReleasesTablesLeavesNoErrorInTheServerLog() throws {
        let server = try PostgreSQLServer()
        defer { server.stop() }
        let database = try PostgreSQLTestDatabase(server: server)
        let store = try database.store()
        let coordinator = MigrationCoordinator(appVersion: "2")
        let service = try coordinator.manager("service", store: store)
        service.register("1") { _ in }
        service.register("2") { _ in }
        try database.connect().execute("""
            CREATE TABLE store_migrations_levels(manager text PRIMARY KEY, level text, app_version text, baseline text);
            CREATE TABLE store_migrations_history(
                id bigserial PRIMARY KEY, manager text NOT NULL, version text NOT NULL, applied_at timestamptz, duration_seconds float8);
            INSERT INTO store_migrations_levels VALUES ('service', '1', NULL, NULL);
            INSERT INTO store_migrations_history(manager, version, applied_at, duration_seconds) VALUES ('service', '1', now(), 0.5)
            """)
        #expect(try coordinator.plan().steps.map(\.id.description) == ["service@2"])
        #expect(try store.readRecords()["service"]?.applied.map(\.version) == ["1"])
        let log = try String(contentsOf: server.logFile, encoding: .utf8)
        #expect(log.contains("database system is ready to accept connections"), "not the server's log: \(log)")
        let errors = log.split(separator: "\n").filter { $0.contains("ERROR:") }
        #expect(errors.isEmpty, "\(errors.joined(separator: "\n"))")
    }
}
