import Foundation
import Testing
import StoreMigrations
import TestSupport
@testable import StoreMigrationsPostgreSQL

// The *Server Replicas* article's samples (Sources/StoreMigrationsPostgreSQL/StoreMigrationsPostgreSQL.docc),
// as written there, on the tests' PostgreSQL server. A sample that changes in the article changes here too.

/// The *Server Replicas* article's samples, on the tests' PostgreSQL server.
@Suite struct ServerReplicasArticleTests {
    /// The quick start's `main`, up to the point where the service would serve: the article's
    /// first line reads `DATABASE_URL` from the environment; here it is the test database.
    func launchReplica(databaseURL: String) async throws -> MigrationReport {
        func startServer() async throws {}

        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let store = try PostgreSQLStore(databaseURL, schema: "public")
        let accounts = try coordinator.manager("accounts", store: store)

        accounts.register("1.0") { db in
            try db.execute("""
                CREATE TABLE account(id bigserial PRIMARY KEY, email text NOT NULL)
                """)
        }
        accounts.register("1.1", transaction: .none) { db in
            try db.execute("""
                CREATE INDEX CONCURRENTLY IF NOT EXISTS account_email
                    ON account(email)
                """)
        }
        accounts.register("2.0") { db in
            try db.execute("""
                ALTER TABLE account ADD COLUMN verified bool NOT NULL DEFAULT false
                """)
        }

        // In every replica: each step runs once across them.
        let report = try await coordinator.run()
        print(report)

        // Only now build and run the Vapor or Hummingbird application.
        try await startServer()
        return report
    }

    @Test func threeReplicasStartingTogetherApplyEachStepOnce() async throws {
        let database = try PostgreSQLTestDatabase()
        let reports = try await withThrowingTaskGroup(of: MigrationReport.self) { group in
            for _ in 0..<3 { group.addTask { try await launchReplica(databaseURL: database.connectionString) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        for step in ["accounts@1.0", "accounts@1.1", "accounts@2.0"] {
            let outcomes = reports.flatMap(\.steps).filter { $0.step.id.description == step }.map(\.outcome)
            #expect(outcomes.filter { $0 == .applied }.count == 1, "\(step): \(outcomes)")
        }
        #expect(try database.columns(of: "account") == ["id", "email", "verified"])
        #expect(try database.connect().scalar(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = 'account_email'::regclass", as: Bool.self) == true)
        #expect(try database.record(of: "accounts").history == ["1.0", "1.1", "2.0"])
        #expect(try database.advisoryLocks() == 0)
        // A fourth replica, later, finds nothing to do.
        #expect(try await !launchReplica(databaseURL: database.connectionString).didRunAnything)
    }

    /// A `.none` step that finds the invalid index an interrupted build left, and builds it again.
    @Test func aRepeatableIndexBuildDropsTheInvalidIndexAnInterruptedBuildLeft() throws {
        let database = try PostgreSQLTestDatabase()
        let admin = try database.connect()
        try admin.execute("CREATE TABLE account(id bigserial PRIMARY KEY, email text NOT NULL)")
        try admin.execute("INSERT INTO account(email) VALUES ('a@example.com'), ('a@example.com')")
        // A unique build fails on the duplicates and leaves an invalid index, as a killed one does.
        #expect(throws: PostgreSQLError.self) { try admin.execute("CREATE UNIQUE INDEX CONCURRENTLY account_email ON account(email)") }
        #expect(try admin.scalar("SELECT indisvalid FROM pg_index WHERE indexrelid = 'account_email'::regclass", as: Bool.self) == false)

        let coordinator = MigrationCoordinator(appVersion: "1.1")
        let accounts = try coordinator.manager("accounts", store: PostgreSQLStore(database.connectionString))
        accounts.register("1.1", transaction: .none) { db in
            let invalid: Bool = try db.scalar("""
                SELECT NOT indisvalid FROM pg_index
                WHERE indexrelid = to_regclass('account_email')
                """) ?? false
            if invalid { try db.execute("DROP INDEX CONCURRENTLY account_email") }
            try db.execute("""
                CREATE INDEX CONCURRENTLY IF NOT EXISTS account_email
                    ON account(email)
                """)
        }
        try coordinator.run()
        #expect(try admin.scalar("SELECT indisvalid FROM pg_index WHERE indexrelid = 'account_email'::regclass", as: Bool.self) == true)
        #expect(try database.record(of: "accounts").history == ["1.1"])
        // Run again on a database that has it (as after a crash before the record): nothing to drop.
        try accounts.reset()
        try coordinator.run()
        #expect(try admin.scalar("SELECT indisvalid FROM pg_index WHERE indexrelid = 'account_email'::regclass", as: Bool.self) == true)
    }

    @Test func planningReadsOnly() throws {
        let database = try PostgreSQLTestDatabase()
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        let accounts = try coordinator.manager("accounts", store: PostgreSQLStore(database.connectionString))
        accounts.register("1.0") { db in try db.execute("CREATE TABLE account(id bigserial PRIMARY KEY)") }

        // Reads the records: creates no table or schema, takes no lock.
        let plan = try coordinator.plan()
        if !plan.isUpToDate { print(plan) }

        #expect(plan.steps.map(\.id.description) == ["accounts@1.0"])
        #expect(try database.tables() == [])
        #expect(try database.advisoryLocks() == 0)
    }

    @Test func theLockKeyIsFoundInPgLocksWhileAStepRuns() throws {
        let database = try PostgreSQLTestDatabase()
        // `store` looks the lock up from another session while `migrating` holds it.
        let migrating = try PostgreSQLStore(database.connectionString)
        let store = try PostgreSQLStore(database.connectionString)
        let stepPID = Locked<Int32?>(nil), seenPID = Locked<Int32?>(nil)
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        let accounts = try coordinator.manager("accounts", store: migrating)
        accounts.register("1.0") { db in
            stepPID.value = db.serverProcessID
            let holder = try store.read { db in
                try db.scalar("""
                    SELECT pid FROM pg_locks
                    WHERE locktype = 'advisory' AND granted AND objsubid = 1
                      AND database = (SELECT oid FROM pg_database
                                      WHERE datname = current_database())
                      AND classid::int8 = ($1::int8 >> 32) & 4294967295
                      AND objid::int8 = $1::int8 & 4294967295
                    """, arguments: [.integer(store.lockKey)], as: Int32.self)
            }
            seenPID.value = holder
        }
        try coordinator.run()
        #expect(stepPID.value != nil && seenPID.value == stepPID.value, "step \(String(describing: stepPID.value)), seen \(String(describing: seenPID.value))")
        #expect(store.lockKey == migrating.lockKey)
        #expect(store.lockKey == AdvisoryLock.key(schema: "public", table: "store_migrations_levels"))
    }

    @Test func aLockTimeoutNamesTheHoldersServerProcess() async throws {
        let database = try PostgreSQLTestDatabase()
        let databaseURL = database.connectionString
        let store = try PostgreSQLStore(databaseURL, lockTimeout: .milliseconds(300))
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        let accounts = try coordinator.manager("accounts", store: store)
        accounts.register("1.0") { db in try db.execute("CREATE TABLE account(id bigserial PRIMARY KEY)") }
        let holder = try database.connect()
        try holder.execute("SELECT pg_advisory_lock($1)", arguments: [.integer(store.lockKey)])

        let explained = Locked<String?>(nil)
        func print(_ line: String) { explained.value = line }
        let error = try await #require(throws: MigrationRunError.self) {
            do {
                try await coordinator.run()
            } catch let error as MigrationRunError {
                let failure = error.underlyingError as? PostgreSQLError
                if case .lockTimeout(let holder?) = failure?.kind {
                    print("server process \(holder) holds the migration lock")
                }
                throw error
            }
        }
        #expect(explained.value == "server process \(holder.serverProcessID) holds the migration lock")
        let failure = try #require(error.underlyingError as? PostgreSQLError)
        #expect(failure.kind == .lockTimeout(holderPID: holder.serverProcessID))
        #expect(try database.tables() == [])
    }

    @Test func theStoresSessionSettingsBoundHowLongADeadReplicaHoldsTheLock() throws {
        let database = try PostgreSQLTestDatabase()
        let databaseURL = database.server.tcpConnectionString(database: database.name)

        let store = try PostgreSQLStore(
            databaseURL, schema: "accounts", lockTimeout: .seconds(300),
            livenessCheckInterval: .milliseconds(500))

        let settings = try store.read { db in
            try ["client_connection_check_interval", "tcp_keepalives_idle", "tcp_keepalives_interval",
                 "tcp_keepalives_count", "tcp_user_timeout"].map { try db.scalar("SHOW \($0)", as: String.self) ?? "" }
        }
        #expect(settings == ["500ms", "10", "5", "3", "10000"])   // seconds, seconds, probes, milliseconds
        #expect(store.lockTimeout == .seconds(300) && store.schema == "accounts")
    }

    /// *Large data changes, batch by batch*: the ordinary step that adds the column, then the
    /// resumable one that fills it, deferred.
    @Test func aDeferredRowTransformFillsTheColumnAfterTheLaunch() throws {
        let database = try PostgreSQLTestDatabase()
        let admin = try database.connect()
        try admin.execute("CREATE TABLE account(id bigserial PRIMARY KEY, email text NOT NULL)")
        try admin.execute("INSERT INTO account(email) SELECT 'user' || i || '@example.com' FROM generate_series(1, 500) AS i")
        let coordinator = MigrationCoordinator(appVersion: "2.2")
        let accounts = try coordinator.manager("accounts", store: PostgreSQLStore(database.connectionString))
        coordinator.deferredWork = .manual

        accounts.register("2.1") { db in
            try db.execute("ALTER TABLE account ADD COLUMN email_domain text")
        }
        accounts.registerResumable(
            "2.2", transformingRowsOf: "account", columns: ["email", "email_domain"], deferred: true
        ) { row in
            let email: String = try row["email"]
            return ["email_domain": .text(String(email.split(separator: "@").last ?? ""))]
        }

        #expect(try coordinator.run().steps.map(\.outcome) == [.applied, .deferred])
        #expect(try admin.scalar("SELECT count(email_domain) FROM account", as: Int.self) == 0)
        #expect(try coordinator.runDeferred().wait().steps.map(\.outcome) == [.applied])
        #expect(try admin.scalar("SELECT count(*) FROM account WHERE email_domain = 'example.com'", as: Int.self) == 500)
        #expect(try database.record(of: "accounts").history == ["2.1", "2.2"])
    }
}
