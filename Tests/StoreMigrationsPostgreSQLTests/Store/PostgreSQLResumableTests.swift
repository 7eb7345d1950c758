import Dispatch
import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsPostgreSQL
import TestSupport

/// Resumable row transforms on a real server: batches commit their rows with the cursor under
/// the advisory lock (held for a batch, free between two), a failure or a server restart resumes
/// after the last committed batch, cursors of any key type read back exactly, and a batch can
/// neither change the schema nor end its transaction.
@Suite struct PostgreSQLResumableTests {
    static let rows = 1_000
    static let migration = MigrationReference(manager: "service", version: "2")

    /// A coordinator whose `1` creates `item(id, value, calls)` with `rows` rows; `2` is what
    /// `register` adds.
    static func coordinator(
        _ database: PostgreSQLTestDatabase, _ register: (MigrationManager<PostgreSQLStore>) -> Void
    ) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: "2")
        let service = try coordinator.manager("service", store: database.store())
        service.register("1") { db in
            try db.execute("CREATE TABLE item(id bigint PRIMARY KEY, value bigint NOT NULL, calls int NOT NULL DEFAULT 0)")
            try db.execute("INSERT INTO item(id, value) SELECT i, i FROM generate_series(1, $1) AS i", arguments: [.integer(Int64(rows))])
        }
        register(service)
        return coordinator
    }

    /// A transform that is not idempotent and counts its calls in the row; it throws once, at
    /// row `failAt`, when given one.
    static func doubling(failAt: Int64? = nil, failures: Locked<Int> = Locked(0)) -> @Sendable (PostgreSQLRow) throws -> [String: PostgreSQLValue]? {
        { row in
            let id: Int64 = try row["id"], value: Int64 = try row["value"], calls: Int64 = try row["calls"]
            if id == failAt, failures.value == 0 {
                failures.value = 1
                throw SimulatedBodyFailure()
            }
            return ["value": .integer(value * 2 + 1), "calls": .integer(calls + 1)]
        }
    }

    /// How many rows were transformed how many times (`calls: count`), and whether every
    /// transformed row holds what one call makes of it.
    static func callCounts(_ database: PostgreSQLTestDatabase) throws -> [Int: Int] {
        let db = try database.connect()
        #expect(try db.scalar(
            "SELECT count(*) FROM item WHERE value <> CASE calls WHEN 0 THEN id WHEN 1 THEN id * 2 + 1 ELSE -1 END",
            as: Int.self) == 0)
        var counts: [Int: Int] = [:]
        for row in try db.rows("SELECT calls, count(*) FROM item GROUP BY calls") { counts[try row[0] as Int] = try row[1] as Int }
        return counts
    }

    static func progress(_ database: PostgreSQLTestDatabase) throws -> String? {
        try database.connect().scalar("SELECT progress FROM store_migrations_levels WHERE manager = 'service'", as: String.self)
    }

    @Test func everyRowIsTransformedOnceEachBatchHoldingTheLockAndItsRowsUntilItCommits() throws {
        let database = try PostgreSQLTestDatabase()
        let events = EventLog()
        let locks = EventLog()
        let coordinator = try Self.coordinator(database) { service in
            // The registered form's body, with a look at the locks before the batch's rows.
            service.registerResumable("2", batchSize: .fixed(300)) { db, batch in
                let admin = try database.connect()
                let holders = try admin.rows(
                    """
                    SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
                      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                    """
                ).map { try $0[0] as Int32 }
                locks.append(holders == [db.serverProcessID] ? "batch holds the lock" : "batch: lock held by \(holders)")
                return try db.transformRows(in: "item", columns: ["value", "calls"], batch: batch) { row in
                    let id: Int64 = try row["id"]
                    if id == 1 {
                        // A row of the batch is locked until the batch commits: a write of the
                        // service's meanwhile would be lost to the transform's update.
                        let refused = #expect(throws: PostgreSQLError.self) {
                            try admin.execute("SELECT id FROM item WHERE id = 2 FOR UPDATE NOWAIT")
                        }
                        locks.append("row of the batch: \(refused?.sqlState ?? "not locked")")
                        // A row of the next batch is not.
                        try admin.execute("SELECT id FROM item WHERE id = 301 FOR UPDATE NOWAIT")
                    }
                    return try Self.doubling()(row)
                }
            }
        }
        coordinator.observer = { event in
            events.append(describe(event))
            if case .batchCommitted = event {
                // Called on the run's thread between two batches: nobody holds the lock.
                let held = (try? database.advisoryLocks()) ?? -1
                locks.append(held == 0 ? "free between batches" : "\(held) locks between batches")
            }
        }
        let report = try coordinator.run()
        #expect(report.steps.map(\.outcome) == [.applied, .applied])
        #expect(try Self.callCounts(database) == [1: Self.rows])
        #expect(events.all.filter { $0.hasPrefix("batch") } == ["batch service@2 300", "batch service@2 600", "batch service@2 900"])
        #expect(locks.all == ["batch holds the lock", "row of the batch: 55P03"]
            + Array(repeating: ["free between batches", "batch holds the lock"], count: 3).flatMap { $0 })
        #expect(try Self.progress(database) == nil)
        #expect(try database.record(of: "service").history == ["1", "2"])
        #expect(try database.advisoryLocks() == 0)
    }

    @Test func aFailedBatchRollsBackAloneAndTheNextRunResumesAfterTheCommittedOnes() throws {
        let database = try PostgreSQLTestDatabase()
        let failures = Locked(0)
        func launch() throws -> MigrationReport {
            try runReport(of: try Self.coordinator(database) { service in
                service.registerResumable(
                    "2", transformingRowsOf: "item", columns: ["value", "calls"], batchSize: .fixed(250),
                    Self.doubling(failAt: 600, failures: failures))
            })
        }
        let first = try launch()
        #expect(first.failures.map(\.step.id.description) == ["service@2"])
        #expect(first.failures.first?.error is SimulatedBodyFailure)
        #expect(try Self.callCounts(database) == [1: 500, 0: 500])
        let record = try database.store().readRecords()["service"]
        let progress = try #require(record?.progress(of: "2"))
        #expect(progress.cursor == "[500]" && progress.done == 500 && progress.total == Self.rows && progress.batches == 2)
        #expect(record?.appliedVersions == ["1"])

        let plan = try Self.coordinator(database) { service in
            service.registerResumable("2", transformingRowsOf: "item", columns: ["value"]) { _ in nil }
        }.plan()
        #expect(plan.description.contains("in progress 2: 50% (500 of 1000) in 2 batches, resumes after [500]"))

        #expect(try launch().steps.map(\.outcome) == [.applied])
        #expect(try Self.callCounts(database) == [1: Self.rows], "every row transformed exactly once")
        #expect(try Self.progress(database) == nil)
    }

    /// Keys whose text needs quoting or escaping, floating-point keys a rounding would move past
    /// their neighbours, timestamps a microsecond apart: a cursor that did not read back exactly
    /// would skip a row or visit one twice.
    @Test(arguments: [
        ("text", [#"a"#, #"a b"#, #"a""b"#, #"a'b"#, #"a\b"#, "a/b", "a\u{1F600}", "b", #"{"x": 1}"#, "ü", "z\u{7F}"]),
        ("float8", ["1e-300", "0.1", "0.30000000000000004", "0.30000000000000009", "1", "1.0000000000000002", "3.5e+300"]),
        ("numeric", ["-1", "0", "0.10", "0.1000000000000000000001", "0.1000000000000000000002", "12345678901234567890.5", "1e30"]),
        ("timestamptz", [
            "2024-05-01 10:00:00+00", "2024-05-01 10:00:00.000001+00", "2024-05-01 10:00:00.000002+00",
            "2024-05-01 10:00:00.000003+00", "2024-05-01 12:00:00.000004+02", "2024-05-01 10:00:00.000005+00",
        ]),
    ])
    func cursorsOfAnyKeyTypeReadBackExactly(type: String, keys: [String]) throws {
        let database = try PostgreSQLTestDatabase()
        let calls = Locked(0)
        let sorted = try database.connect().rows(
            "SELECT k::text FROM unnest($1::\(type)[]) AS u(k) ORDER BY u.k", arguments: [.text(Self.arrayLiteral(keys))]
        ).map { try $0[0] as String }
        func launch() throws -> MigrationReport {
            let coordinator = MigrationCoordinator(appVersion: "2")
            let service = try coordinator.manager("service", store: database.store())
            service.register("1") { db in
                try db.execute("CREATE TABLE item(k \(type) PRIMARY KEY, calls int NOT NULL DEFAULT 0)")
                try db.execute("INSERT INTO item(k) SELECT unnest($1::\(type)[])", arguments: [.text(Self.arrayLiteral(keys))])
            }
            service.registerResumable("2", transformingRowsOf: "item", columns: ["calls"], batchSize: .fixed(2)) { row in
                // Fails once, at the fifth row: the first of the third batch.
                calls.value += 1
                if calls.value == 5 { throw SimulatedBodyFailure() }
                // A cursor that did not read back could send the batches round in a loop.
                let done: Int = try row["calls"]
                try #require(done == 0, "row \(row.values[0]) visited again")
                return ["calls": .integer(Int64(done) + 1)]
            }
            return try runReport(of: coordinator)
        }
        let first = try launch()
        #expect(first.failures.map(\.step.id.description) == ["service@2"], "\(first.failures.map(\.error))")
        let cursor = try #require(try database.store().readRecords()["service"]?.progress(of: "2")?.cursor)
        let decoded = try JSONDecoder().decode([String].self, from: Data(cursor.utf8))
        #expect(try database.connect().scalar("SELECT $1::\(type) = $2::\(type)", arguments: [.text(decoded[0]), .text(sorted[3])], as: Bool.self) == true,
                "the cursor \(cursor) is the fourth key, \(sorted[3])")
        #expect(try launch().steps.map(\.outcome) == [.applied])
        let rows = try database.connect().rows("SELECT k::text, calls FROM item ORDER BY item.k")
        #expect(try rows.map { try $0[0] as String } == sorted)
        #expect(try rows.map { try $0[1] as Int } == Array(repeating: 1, count: keys.count), "every row transformed once")
    }

    /// `{"a","b"}` with every element quoted and escaped.
    static func arrayLiteral(_ values: [String]) -> String {
        "{" + values.map { "\"" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
            .joined(separator: ",") + "}"
    }

    /// A named resumable transform: a failed batch's error names the migration by its name too,
    /// and the history keeps the name and the author's fingerprint once it is applied.
    @Test func aNamedTransformIsNamedInItsErrorAndRecordedWithItsFingerprint() throws {
        let database = try PostgreSQLTestDatabase()
        let doubling = Self.doubling()
        // The first launch writes text into row 600's bigint: the server refuses that batch.
        let coordinator = { (refused: Int64?) in try Self.coordinator(database) { service in
            service.registerResumable(
                "2", transformingRowsOf: "item", columns: ["value", "calls"], batchSize: .fixed(250),
                options: .named("double the values", fingerprint: "value * 2 + 1")
            ) { row in try row["id"] as Int64 == refused ? ["value": .text("many")] : doubling(row) }
        } }
        let report = try runReport(of: coordinator(600))
        let failure = try #require(report.failures.first?.error as? PostgreSQLError)
        #expect(failure.migration?.name == "double the values")
        #expect("\(failure)".contains("Migration: service@2 (double the values)."), "\(failure)")
        _ = try coordinator(nil).run()
        let row = try #require(try database.connect().rows(
            "SELECT name, fingerprint FROM store_migrations_history WHERE manager = 'service' AND version = '2'").first)
        #expect(try row[0] as String == "double the values")
        #expect(try row[1] as String == MigrationFingerprint(of: "value * 2 + 1").rawValue)
        #expect(try Self.callCounts(database) == [1: Self.rows])
    }

    @Test func aBatchThatChangesTheSchemaIsRefusedNamingTheStepAndTheStatement() throws {
        let database = try PostgreSQLTestDatabase()
        let store = try database.store()
        let coordinator = MigrationCoordinator(appVersion: "2")
        let service = try coordinator.manager("service", store: store)
        service.register("1") { db in
            try db.execute("CREATE TABLE item(id bigint PRIMARY KEY, value bigint NOT NULL, calls int NOT NULL DEFAULT 0)")
            try db.execute("INSERT INTO item(id, value) SELECT i, i FROM generate_series(1, 10) AS i")
        }
        service.registerResumable("2") { db, _ in
            try db.execute("UPDATE item SET calls = calls + 1 WHERE id = 1")
            // Caught and ignored: the batch is refused all the same, and the body's next
            // statement is refused before it runs.
            try? db.execute("ALTER TABLE item ADD COLUMN note text")
            try db.execute("UPDATE item SET calls = calls + 1 WHERE id = 2")
            return .finished(processed: 1)
        }
        let report = try runReport(of: coordinator)
        let failure = try #require(report.failures.first?.error as? PostgreSQLError)
        #expect(failure.kind == .schemaChangeInBatch)
        #expect(failure.migration == Self.migration)
        #expect(failure.sql == "ALTER TABLE item ADD COLUMN note text")
        #expect(failure.message == "the statement changed relation item")
        #expect(failure.description == "A batch of a resumable migration on \(store.description) changed the schema: the "
            + "statement changed relation item. Migration: service@2. Statement: ALTER TABLE item ADD COLUMN note text. "
            + "Batches must leave the schema alone, so the batch was rolled back and its progress not recorded: make the "
            + "change in an ordinary migration registered before this one (temporary tables are allowed).")
        #expect(try database.columns(of: "item") == ["id", "value", "calls"])
        #expect(try database.connect().scalar("SELECT sum(calls) FROM item", as: Int.self) == 0, "the batch's update was rolled back")
        #expect(try database.record(of: "service").history == ["1"])
        #expect(try Self.progress(database) == nil)
        #expect(try database.advisoryLocks() == 0)

        // An ordinary migration may change the schema: the refusal is the batch's alone.
        let later = MigrationCoordinator(appVersion: "2")
        let fixed = try later.manager("service", store: database.store())
        fixed.register("1") { _ in }
        fixed.register("1.5") { db in try db.execute("ALTER TABLE item ADD COLUMN note text") }
        fixed.registerResumable("2", transformingRowsOf: "item", columns: ["note"]) { _ in ["note": "done"] }
        #expect(try later.run().steps.map(\.outcome) == [.applied, .applied])
        #expect(try database.connect().scalar("SELECT count(*) FROM item WHERE note = 'done'", as: Int.self) == 10)
    }

    /// Schema changes the statement's tag does not show (a `DO` block, a function a `SELECT`
    /// calls, DDL inside a savepoint) are refused too; temporary tables are not schema changes.
    @Test(arguments: [
        ("DO $$ BEGIN EXECUTE 'CREATE INDEX item_by_value ON item(value)'; END $$", "the statement changed relation item_by_value"),
        ("SELECT add_note()", "a statement of the batch (a function it called, perhaps) changed relation item"),
        ("SAVEPOINT s; ALTER TABLE item ALTER COLUMN value SET NOT NULL; RELEASE SAVEPOINT s", "the statement changed relation item"),
        ("CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1'", "the statement changed the system catalog pg_proc"),
        ("CREATE TABLE copy AS SELECT * FROM item", "the statement changed relation copy"),
        ("COMMENT ON TABLE item IS 'rewritten'", "the statement changed the system catalog pg_description"),
        ("DROP TABLE other", "the statement dropped the relation with OID OTHER"),
        ("CREATE TEMP TABLE scratch(id bigint PRIMARY KEY, v text DEFAULT 'x') ON COMMIT DROP; INSERT INTO scratch(id) SELECT id FROM item", nil),
        // A temporary table kept from one batch to the next, emptied, dropped and made again.
        ("CREATE TEMP TABLE IF NOT EXISTS kept(id bigint PRIMARY KEY); TRUNCATE kept; INSERT INTO kept SELECT id FROM item", nil),
        ("DROP TABLE IF EXISTS kept; CREATE TEMP TABLE kept(id serial, note text DEFAULT 'x')", nil),
    ] as [(String, String?)])
    func schemaChangesHiddenFromTheTagAreRefusedAndTemporaryTablesAllowed(statement: String, refusal: String?) throws {
        let database = try PostgreSQLTestDatabase()
        let coordinator = MigrationCoordinator(appVersion: "2")
        let service = try coordinator.manager("service", store: database.store())
        service.register("1") { db in
            try db.execute("""
                CREATE TABLE item(id bigint PRIMARY KEY, value bigint);
                INSERT INTO item SELECT i, i FROM generate_series(1, 10) AS i;
                CREATE TABLE other(id int);
                CREATE FUNCTION add_note() RETURNS void LANGUAGE plpgsql AS $$ BEGIN ALTER TABLE item ADD COLUMN note text; END $$
                """)
        }
        let batches = Locked(0)
        service.registerResumable("2") { db, _ in
            try db.execute(statement)
            try db.execute("UPDATE item SET value = value + 1")
            batches.value += 1
            return batches.value < 2 ? .more(cursor: "\(batches.value)", processed: 1) : .finished(processed: 1)
        }
        let report = try runReport(of: coordinator)
        let other = try database.connect().scalar("SELECT 'other'::regclass::oid::int8", as: Int.self)
        if let refusal {
            let failure = try #require(report.failures.first?.error as? PostgreSQLError, "\(report)")
            #expect(failure.kind == .schemaChangeInBatch)
            #expect(failure.migration == Self.migration)
            #expect(failure.message == refusal.replacingOccurrences(of: "OTHER", with: "\(other ?? 0)"))
            #expect(failure.sql == (refusal.hasPrefix("a statement") ? nil : statement))
            #expect(try database.columns(of: "item") == ["id", "value"])
            #expect(try database.tables() == ["item", "other", "store_migrations_history", "store_migrations_levels"])
            #expect(try database.connect().scalar("SELECT sum(value) FROM item", as: Int.self) == 55)
            #expect(try database.record(of: "service").history == ["1"])
        } else {
            #expect(report.failures.isEmpty, "\(report.failures.map(\.error))")
            #expect(try database.connect().scalar("SELECT sum(value) FROM item", as: Int.self) == 75)
            #expect(try database.record(of: "service").history == ["1", "2"])
        }
    }

    /// `COMMIT` in a batch is refused, `COMMIT; BEGIN` too (the transaction is open again when the
    /// body returns, but it is not the step's), and so is every statement after it.
    @Test(arguments: ["COMMIT", "COMMIT; BEGIN", "ROLLBACK; BEGIN", "END", "ROLLBACK"])
    func aBatchThatEndsItsTransactionIsRefusedAndRecordsNothing(ending: String) throws {
        let database = try PostgreSQLTestDatabase()
        let coordinator = try Self.coordinator(database) { service in
            service.registerResumable("2") { db, _ in
                try db.execute("UPDATE item SET calls = calls + 1 WHERE id = 1")
                try? db.execute(ending)
                // Would autocommit after a COMMIT: refused before it is sent.
                try? db.execute("UPDATE item SET calls = calls + 1 WHERE id = 2")
                return .finished(processed: 1)
            }
        }
        let report = try runReport(of: coordinator)
        let failure = try #require(report.failures.first?.error as? PostgreSQLError)
        #expect(failure.kind == .misuse)
        #expect(failure.migration == Self.migration)
        #expect(failure.message
            == "the migration body ended the step's transaction (COMMIT or ROLLBACK); what it committed stays, nothing was recorded")
        #expect(failure.sql == ending)
        let committed = ending.hasPrefix("ROLLBACK") ? 0 : 1
        #expect(try database.connect().scalar("SELECT sum(calls) FROM item", as: Int.self) == committed)
        #expect(try database.record(of: "service").history == ["1"])
        #expect(try Self.progress(database) == nil)
        #expect(try database.advisoryLocks() == 0)
    }

    @Test func aServerRestartedMidBatchFailsTheStepWithATypedErrorAndTheNextRunResumes() throws {
        let server = try PostgreSQLServer()
        defer { server.stop() }
        let database = try PostgreSQLTestDatabase(server: server)
        let reached = DispatchSemaphore(value: 0)
        let restarted = DispatchSemaphore(value: 0)
        let paused = Locked(false)
        func coordinator() throws -> MigrationCoordinator {
            try Self.coordinator(database) { service in
                service.registerResumable("2", transformingRowsOf: "item", columns: ["value", "calls"], batchSize: .fixed(100)) { row in
                    if try row["id"] as Int == 350, !paused.value {
                        // Mid-batch: rows 301…349 are updated in the batch's open transaction.
                        paused.value = true
                        reached.signal()
                        // An outer bound only: the test signals as soon as the server is back.
                        _ = restarted.wait(timeout: .now() + 300)
                    }
                    return try Self.doubling()(row)
                }
            }
        }
        let first = try coordinator()
        let outcome = Locked<Result<MigrationReport, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            outcome.value = Result { try first.run() }
            done.signal()
        }
        try #require(reached.wait(timeout: .now() + 300) == .success, "the transform never reached row 350")
        try server.restart()
        restarted.signal()
        try #require(done.wait(timeout: .now() + 300) == .success)
        guard case .failure(let error as MigrationRunError)? = outcome.value else {
            Issue.record("the run did not fail: \(String(describing: outcome.value))")
            return
        }
        let failure = try #require(error.underlyingError as? PostgreSQLError)
        #expect(failure.kind == .connectionLost, "\(failure)")
        #expect(failure.sqlState == "57P01", "\(failure)")
        #expect(failure.migration == Self.migration)
        #expect(try Self.callCounts(database) == [1: 300, 0: 700], "three batches committed, the fourth rolled back")
        #expect(try database.store().readRecords()["service"]?.progress(of: "2")?.cursor == "[300]")

        let report = try coordinator().run()
        #expect(report.steps.map(\.outcome) == [.applied])
        #expect(try Self.callCounts(database) == [1: Self.rows], "every row transformed exactly once")
        #expect(try database.record(of: "service").history == ["1", "2"])
        #expect(try Self.progress(database) == nil)
    }

    /// A replica running a deferred step's batches back to back takes the lock again right after
    /// each commit; another replica's launch, polling for it, must still get in between two
    /// batches rather than wait for the whole step.
    @Test func anotherReplicasLaunchGetsTheLockBetweenTwoBatches() throws {
        let database = try PostgreSQLTestDatabase()
        let other = MigrationCoordinator(appVersion: "1")
        try other.manager("other", store: database.store()).register("1") { db in
            try db.execute("CREATE TABLE other_table(id int)")
        }
        let otherFinished = Locked<Int?>(nil)
        let batches = Locked(0)
        let launched = DispatchSemaphore(value: 0)
        let coordinator = try Self.coordinator(database) { service in
            service.registerResumable(
                "2", transformingRowsOf: "item", columns: ["value", "calls"], batchSize: .fixed(5), deferred: true
            ) { row in
                usleep(1_000)
                return try Self.doubling()(row)
            }
        }
        coordinator.deferredWork = .manual
        coordinator.observer = { event in
            guard case .batchCommitted = event else { return }
            batches.value += 1
            // After the fifth of 200 batches (about a second of work left), the other replica launches.
            if batches.value == 5 {
                Thread.detachNewThread {
                    _ = try? other.run()
                    otherFinished.value = batches.value
                    launched.signal()
                }
            }
        }
        #expect(try coordinator.run().steps.map(\.outcome) == [.applied, .deferred])
        let background = coordinator.runDeferred(queue: DispatchQueue(label: "test"))
        #expect(try background.wait().steps.map(\.outcome) == [.applied])
        try #require(launched.wait(timeout: .now() + 300) == .success)
        let finishedAfter = try #require(otherFinished.value)
        #expect(finishedAfter < 200, "the other replica's launch waited for all \(batches.value) batches")
        #expect(try database.record(of: "other").history == ["1"])
        #expect(try Self.callCounts(database) == [1: Self.rows])
        print("Another replica's launch finished after batch \(finishedAfter) of \(batches.value)")
    }
}
