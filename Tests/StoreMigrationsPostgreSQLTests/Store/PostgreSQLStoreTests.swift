import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsPostgreSQL
import TestSupport

/// `PostgreSQLStore` on a real server, in one process: exactly once, rollback, policies, hooks,
/// baselines, history, late migrations and read-only planning.
@Suite struct PostgreSQLStoreTests {
    @Test func stepsRunOnceWithTheirRecordAndHistory() throws {
        let database = try PostgreSQLTestDatabase()
        let calls = CallCounter()
        func coordinator() throws -> MigrationCoordinator {
            let coordinator = MigrationCoordinator(appVersion: "1.2")
            let service = try coordinator.manager("service", store: database.store())
            service.register("1.0") { db in
                calls.hit("1.0")
                try db.execute("CREATE TABLE account(id bigint PRIMARY KEY, name text NOT NULL)")
            }
            service.register("1.1") { db in
                calls.hit("1.1")
                try db.execute("INSERT INTO account VALUES ($1, $2), ($3, $4)", arguments: [1, "ada", 2, "grace"])
            }
            service.register("1.2") { db in
                calls.hit("1.2")
                try db.execute("ALTER TABLE account ADD COLUMN email text")
            }
            return coordinator
        }
        let first = try coordinator().run()
        #expect(first.didRunAnything)
        #expect(first.steps.map(\.outcome) == [.applied, .applied, .applied])
        let second = try coordinator().run()
        #expect(!second.didRunAnything)
        #expect(calls["1.0"] == 1 && calls["1.1"] == 1 && calls["1.2"] == 1)
        #expect(try database.columns(of: "account") == ["id", "name", "email"])
        #expect(try database.connect().scalar("SELECT count(*) FROM account", as: Int.self) == 2)
        let record = try database.record(of: "service")
        #expect(record.level == "1.2")
        #expect(record.history == ["1.0", "1.1", "1.2"])
        let manager = try MigrationCoordinator(appVersion: "1.2").manager("service", store: database.store())
        let applied = try manager.record().applied
        #expect(applied.map(\.version) == ["1.0", "1.1", "1.2"])
        #expect(applied.allSatisfy { ($0.appliedAt.map { abs($0.timeIntervalSinceNow) < 60 } ?? false) && ($0.duration ?? -1) >= 0 })
        #expect(try database.advisoryLocks() == 0)
    }

    @Test func aFailingBodyRollsBackItsSchemaChangesDataAndRecord() throws {
        let database = try PostgreSQLTestDatabase()
        struct Refusal: Error {}
        let coordinator = MigrationCoordinator(appVersion: "2")
        let service = try coordinator.manager("service", store: database.store())
        service.register("1") { db in try db.execute("CREATE TABLE kept(id int)") }
        service.register("2") { db in
            try db.execute("CREATE TABLE dropped_with_the_step(id int); INSERT INTO dropped_with_the_step VALUES (1)")
            try db.execute("ALTER TABLE kept ADD COLUMN lost int")
            throw Refusal()
        }
        let error = try #require(throws: MigrationRunError.self) { try coordinator.run() }
        #expect(error.underlyingError is Refusal)
        #expect(try database.tables() == ["kept", "store_migrations_history", "store_migrations_levels"])
        #expect(try database.columns(of: "kept") == ["id"])
        #expect(try database.record(of: "service").level == "1")
        #expect(try database.record(of: "service").history == ["1"])
        #expect(try database.advisoryLocks() == 0)
    }

    @Test func aFailingStatementIsATypedErrorNamingTheStoreAndTheStep() throws {
        let database = try PostgreSQLTestDatabase()
        let store = try database.store()
        let coordinator = MigrationCoordinator(appVersion: "1")
        let service = try coordinator.manager("service", store: store)
        service.register("1") { db in
            try db.execute("CREATE TABLE t(id int)")
            try db.execute("INSERT INTO missing_table VALUES ($1)", arguments: [1])
        }
        let error = try #require(throws: MigrationRunError.self) { try coordinator.run() }
        let failure = try #require(error.underlyingError as? PostgreSQLError)
        #expect(failure.kind == .statementFailed)
        #expect(failure.sqlState == "42P01")
        #expect(failure.message == "relation \"missing_table\" does not exist")
        #expect(failure.sql == "INSERT INTO missing_table VALUES ($1)")
        #expect(failure.store == store.description)
        #expect(failure.migration == MigrationReference(manager: "service", version: "1"))
        // The first step creates the record tables in its transaction: rolled back with it.
        #expect(try database.tables() == [])
        #expect(try database.advisoryLocks() == 0)
    }

    @Test func aTransactionalStepRefusesCreateIndexConcurrentlyAndSaysWhatToDo() throws {
        let database = try PostgreSQLTestDatabase()
        let coordinator = MigrationCoordinator(appVersion: "2")
        let service = try coordinator.manager("service", store: database.store())
        service.register("1") { db in try db.execute("CREATE TABLE t(id int)") }
        service.register("2") { db in try db.execute("CREATE INDEX CONCURRENTLY t_id ON t(id)") }
        let error = try #require(throws: MigrationRunError.self) { try coordinator.run() }
        let failure = try #require(error.underlyingError as? PostgreSQLError)
        #expect(failure.sqlState == "25001")
        #expect(try database.record(of: "service").level == "1")

        let again = MigrationCoordinator(appVersion: "2")
        let fixed = try again.manager("service", store: database.store())
        fixed.register("1") { db in try db.execute("CREATE TABLE t(id int)") }
        fixed.register("2", transaction: .none) { db in
            try db.execute("CREATE INDEX CONCURRENTLY IF NOT EXISTS t_id ON t(id)")
        }
        let report = try again.run()
        #expect(report.steps.map(\.step.id.description) == ["service@2"])
        #expect(report.steps.map(\.outcome) == [.applied])
        #expect(try database.connect().scalar(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = 't_id'::regclass", as: Bool.self) == true)
        #expect(try database.record(of: "service").history == ["1", "2"])
        #expect(try database.advisoryLocks() == 0)
    }

    @Test func planningReadsOnlyAndCreatesNothing() throws {
        let database = try PostgreSQLTestDatabase()
        let coordinator = MigrationCoordinator(appVersion: "1")
        let service = try coordinator.manager("service", store: database.store(schema: "migrations"))
        service.register("1") { db in try db.execute("CREATE TABLE t(id int)") }
        let plan = try coordinator.plan()
        #expect(plan.steps.count == 1)
        #expect(!plan.isUpToDate)
        #expect(try database.tables() == [])
        #expect(try database.tables(in: "migrations") == [])
        #expect(try database.connect().scalar(
            "SELECT count(*) FROM pg_namespace WHERE nspname = 'migrations'", as: Int.self) == 0)
        #expect(try database.advisoryLocks() == 0)

        _ = try coordinator.run()
        #expect(try database.tables(in: "migrations") == ["store_migrations_history", "store_migrations_levels"])
        #expect(try coordinator.plan().isUpToDate)
    }

    @Test func planningAMissingDatabaseIsATypedErrorNotAFirstLaunch() throws {
        let server = try PostgreSQLServer.start()
        let store = try PostgreSQLStore(server.connectionString(database: "no_such_database"))
        let coordinator = MigrationCoordinator(appVersion: "1")
        try coordinator.manager("service", store: store).register("1") { _ in }
        let planning = try #require(throws: MigrationError.self) { try coordinator.plan() }
        guard case .unreadableState(let manager, let storeName, let reason) = planning else {
            Issue.record("planning threw \(planning)")
            return
        }
        #expect(manager == "service" && storeName == store.description)
        #expect(reason.contains("database \"no_such_database\" does not exist"))
        let error = try #require(throws: PostgreSQLError.self) { try store.readRecords() }
        #expect(error.kind == .connectionFailed)
        #expect(error.sqlState == "3D000")
        #expect(error.store == store.description)
        #expect(error.description.contains("Create the database"))
        #expect(try server.connect().scalar(
            "SELECT count(*) FROM pg_database WHERE datname = 'no_such_database'", as: Int.self) == 0)
    }

    @Test func aNewerDatabaseFailsByDefaultAndIsIgnoredWhenAsked() throws {
        let database = try PostgreSQLTestDatabase()
        let newer = MigrationCoordinator(appVersion: "2")
        let newService = try newer.manager("service", store: database.store())
        newService.register("1") { db in try db.execute("CREATE TABLE t(id int)") }
        newService.register("2") { db in try db.execute("ALTER TABLE t ADD COLUMN v2 int") }
        _ = try newer.run()

        let older = MigrationCoordinator(appVersion: "1")
        let oldService = try older.manager("service", store: database.store())
        oldService.register("1") { db in try db.execute("CREATE TABLE t(id int)") }
        #expect(try older.plan().hasNewerStore)
        #expect(throws: MigrationError.storeIsNewer(
            manager: "service", store: try database.store().description, level: "2", appVersion: "1")) { try older.run() }

        oldService.newerStorePolicy = .ignore
        let report = try older.run()
        #expect(!report.didRunAnything)
        #expect(try database.record(of: "service").level == "2")
        #expect(try database.columns(of: "t") == ["id", "v2"])
    }

    @Test func appVersionHooksRunOncePerVersion() throws {
        let database = try PostgreSQLTestDatabase()
        let calls = CallCounter()
        func launch(_ version: Version) throws {
            let coordinator = MigrationCoordinator(appVersion: version)
            let service = try coordinator.manager("service", store: database.store())
            service.register("1") { db in try db.execute("CREATE TABLE hook_log(version text)") }
            service.onAppVersionChange { previous, current in
                calls.hit("\(previous?.description ?? "none")→\(current)")
            }
            _ = try coordinator.run()
        }
        try launch("1")
        try launch("1")
        try launch("1.1")
        #expect(calls["none→1"] == 1)
        #expect(calls["1→1.1"] == 1)
        #expect(try database.connect().scalar(
            "SELECT app_version FROM store_migrations_levels WHERE manager = 'service'", as: String.self) == "1.1")
    }

    @Test func aBaselineSkipsWhatItCoversAndLateMigrationsRun() throws {
        let database = try PostgreSQLTestDatabase()
        try database.connect().execute("CREATE TABLE legacy(id int)")
        let calls = CallCounter()
        let coordinator = MigrationCoordinator(appVersion: "1.3")
        let service = try coordinator.manager("service", store: database.store())
        for version: Version in ["1.0", "1.1", "1.2"] {
            service.register(version) { _ in calls.hit(version.description) }
        }
        service.register("1.3") { db in try db.execute("ALTER TABLE legacy ADD COLUMN added int") }
        #expect(try service.baseline(at: "1.2"))
        #expect(try !service.baseline(at: "1.2"))
        _ = try coordinator.run()
        #expect(calls["1.0"] == 0 && calls["1.1"] == 0 && calls["1.2"] == 0)
        #expect(try database.columns(of: "legacy") == ["id", "added"])
        #expect(try database.connect().scalar(
            "SELECT baseline FROM store_migrations_levels WHERE manager = 'service'", as: String.self) == "1.2")

        // A branch merged after 1.3 shipped adds 1.2.5: late, run by default.
        let later = MigrationCoordinator(appVersion: "1.3")
        let laterService = try later.manager("service", store: database.store())
        for version: Version in ["1.0", "1.1", "1.2", "1.3"] { laterService.register(version) { _ in } }
        laterService.register("1.2.5") { db in try db.execute("CREATE TABLE late(id int)") }
        let plan = try later.plan()
        #expect(plan.managers.first?.late == ["1.2.5"])
        let report = try later.run()
        #expect(report.steps.map(\.step.id.version) == ["1.2.5"])
        #expect(try database.tables().contains("late"))
        #expect(try database.record(of: "service").history == ["1.3", "1.2.5"])
        #expect(try database.record(of: "service").level == "1.3")
    }

    @Test func timeoutsReadsAndABodyEndingItsTransactionAreTypedErrors() throws {
        let database = try PostgreSQLTestDatabase()
        let store = try PostgreSQLStore(database.connectionString, statementTimeout: .milliseconds(200))
        let coordinator = MigrationCoordinator(appVersion: "2")
        let service = try coordinator.manager("service", store: store)
        service.register("1") { db in try db.execute("CREATE TABLE t(id int); INSERT INTO t VALUES (1)") }
        service.register("2") { db in try db.execute("SELECT pg_sleep(2)") }
        let error = try #require(throws: MigrationRunError.self) { try coordinator.run() }
        let timeout = try #require(error.underlyingError as? PostgreSQLError)
        #expect(timeout.sqlState == "57014")
        #expect(timeout.message == "canceling statement due to statement timeout")
        #expect(timeout.migration == MigrationReference(manager: "service", version: "2"))

        #expect(try store.read { db in try db.scalar("SELECT count(*) FROM t", as: Int.self) } == 1)
        let refused = try #require(throws: PostgreSQLError.self) { try store.read { db in try db.execute("DELETE FROM t") } }
        #expect(refused.sqlState == "25006")

        let committing = MigrationCoordinator(appVersion: "3")
        let rogue = try committing.manager("service", store: store)
        rogue.register("3") { db in try db.execute("INSERT INTO t VALUES (3); COMMIT") }
        let misuse = try #require(throws: MigrationRunError.self) { try committing.run() }
        let failure = try #require(misuse.underlyingError as? PostgreSQLError)
        #expect(failure.kind == .misuse)
        #expect(failure.message.contains("ended the step's transaction"))
        #expect(try database.record(of: "service").history == ["1"])
        #expect(try database.advisoryLocks() == 0)
    }

    @Test func recordsReadSeeResetsAndOtherReplicasWrites() throws {
        let database = try PostgreSQLTestDatabase()
        let store = try database.store()
        func launch(_ store: PostgreSQLStore) throws -> (MigrationManager<PostgreSQLStore>, MigrationManager<PostgreSQLStore>, MigrationReport) {
            let coordinator = MigrationCoordinator(appVersion: "2")
            let a = try coordinator.manager("a", store: store)
            let b = try coordinator.manager("b", store: store)
            a.register("1") { _ in }
            a.register("2") { _ in }
            b.register("1") { _ in }
            return (a, b, try coordinator.run())
        }
        let (a, b, first) = try launch(store)
        #expect(first.steps.count == 3)
        #expect(try a.appliedMigrations() == ["1", "2"])
        try a.reset()
        #expect(try a.appliedMigrations() == [])
        #expect(try b.appliedMigrations() == ["1"])
        // Another replica (another connection) applies a's migrations again: the rows are newer.
        let other = try database.store()
        let (_, _, second) = try launch(other)
        #expect(second.steps.map(\.step.id.description) == ["a@1", "a@2"])
        #expect(try a.appliedMigrations() == ["1", "2"])
        // It resets and re-applies them: as many rows deleted as added, all seen.
        let (otherA, _, _) = try launch(other)
        try otherA.reset()
        let (_, _, third) = try launch(other)
        #expect(third.steps.count == 2)
        #expect(try database.record(of: "a").history == ["1", "2"])
        let appliedAt = try a.record().applied.compactMap(\.appliedAt)
        let reapplied = try otherA.record().applied.compactMap(\.appliedAt)
        #expect(appliedAt == reapplied && appliedAt.count == 2)
    }

    /// A history row changed in place (the row count unchanged) behind the store's long-lived
    /// connection: the next read, which the step executor trusts to skip a step, must see it.
    @Test func aHistoryRowChangedInPlaceIsSeenByTheNextStep() throws {
        let database = try PostgreSQLTestDatabase()
        let store = try database.store()
        let counter = CallCounter()
        func launch() throws -> MigrationReport {
            let coordinator = MigrationCoordinator(appVersion: "2")
            let service = try coordinator.manager("service", store: store)
            service.register("1") { _ in counter.hit("1") }
            service.register("2") { _ in counter.hit("2") }
            return try coordinator.run()
        }
        _ = try launch()
        #expect(try database.record(of: "service").history == ["1", "2"])
        // Another program marks 2 as not applied by renaming its row: same count, same last id.
        let admin = try database.connect()
        try admin.execute("UPDATE store_migrations_history SET manager = 'retired' WHERE version = '2'")
        try admin.execute("UPDATE store_migrations_levels SET level = '1' WHERE manager = 'service'")
        let second = try launch()
        #expect(second.steps.map(\.step.id.description) == ["service@2"])
        #expect(counter["1"] == 1 && counter["2"] == 2)
        #expect(try database.record(of: "service").history == ["1", "2"])
    }
}
