import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsPostgreSQL
import TestSupport

/// A folder of SQL files on a PostgreSQL store: an edited applied file reported by the plan,
/// refused under `.fail` before any body, accepted by a repair; the record tables of the previous
/// release (no name or fingerprint column) read without a change and gain the columns.
@Suite struct PostgreSQLSQLFileTests {
    let folder: TemporaryFolder
    let migrations: URL

    init() throws {
        folder = try TemporaryFolder()
        migrations = folder.file("migrations")
        try FileManager.default.createDirectory(at: migrations, withIntermediateDirectories: true)
        try write("V1.0__create_orders.sql", "CREATE TABLE orders(id bigint PRIMARY KEY);\n")
        try write("V1.1__add_currency.sql", "ALTER TABLE orders ADD COLUMN currency char(3);\n")
    }

    func write(_ name: String, _ text: String) throws {
        try text.write(to: migrations.appendingPathComponent(name), atomically: true, encoding: .utf8)
    }

    func launch(
        _ database: PostgreSQLTestDatabase, _ appVersion: Version, policy: FingerprintPolicy = .warn
    ) throws -> (MigrationCoordinator, MigrationManager<PostgreSQLStore>) {
        let coordinator = MigrationCoordinator(appVersion: appVersion)
        let service = try coordinator.manager("service", store: database.store())
        service.fingerprintPolicy = policy
        try service.registerSQLFiles(in: migrations)
        return (coordinator, service)
    }

    func history(_ database: PostgreSQLTestDatabase) throws -> [[String?]] {
        try database.connect().rows("SELECT version, name, fingerprint FROM store_migrations_history ORDER BY id").map { row in
            [try row[0] as String?, try row[1] as String?, try row[2] as String?]
        }
    }

    @Test func anEditedAppliedFileIsReportedRefusedBeforeAnyBodyAndAcceptedByARepair() throws {
        let database = try PostgreSQLTestDatabase()
        _ = try launch(database, "1.1").0.run()
        #expect(try history(database) == [
            ["1.0", "create orders", MigrationFingerprint(of: "CREATE TABLE orders(id bigint PRIMARY KEY);\n").rawValue],
            ["1.1", "add currency", MigrationFingerprint(of: "ALTER TABLE orders ADD COLUMN currency char(3);\n").rawValue],
        ])
        try write("V1.1__add_currency.sql", "ALTER TABLE orders ADD COLUMN currency char(3) NOT NULL DEFAULT 'EUR';\n")
        try write("V1.2__create_refunds.sql", "CREATE TABLE refunds(id bigint PRIMARY KEY);\n")

        let (planned, _) = try launch(database, "1.2")
        #expect(try planned.plan().managers[0].changedFingerprints.map(\.description) == [
            "service@1.1 (add currency): applied as "
                + "\(MigrationFingerprint(of: "ALTER TABLE orders ADD COLUMN currency char(3);\n")), now "
                + "\(MigrationFingerprint(of: "ALTER TABLE orders ADD COLUMN currency char(3) NOT NULL DEFAULT 'EUR';\n"))",
        ])

        let (refused, service) = try launch(database, "1.2", policy: .fail)
        let error = try #require(throws: MigrationError.self) { try refused.run() }
        guard case .fingerprintsChanged(manager: "service", _, let changes) = error else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(changes.map(\.migration) == [service.migration("1.1")])
        #expect(try !database.tables().contains("refunds"), "no body may run")

        #expect(try service.repairFingerprints() == ["1.1"])
        #expect(try refused.plan().managers[0].changedFingerprints == [])
        _ = try refused.run()
        #expect(try database.tables().contains("refunds"))
        #expect(try history(database).map { $0[1] } == ["create orders", "add currency", "create refunds"])
    }

    @Test func aFileWithTheNoTransactionDirectiveCreatesAnIndexConcurrently() throws {
        let database = try PostgreSQLTestDatabase()
        let text = """
            -- Built without locking orders against writes.
            -- store-migrations: no-transaction
            CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_currency ON orders(currency);

            """
        try write("V1.2__index_currency.sql", text)
        let report = try launch(database, "1.2").0.run()
        #expect(report.steps.map(\.step.title) == ["service@1.0 (create orders)", "service@1.1 (add currency)", "service@1.2 (index currency)"])
        #expect(report.steps.map(\.outcome) == [.applied, .applied, .applied])
        #expect(try database.connect().scalar(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = 'orders_currency'::regclass", as: Bool.self) == true)
        #expect(try database.record(of: "service").history == ["1.0", "1.1", "1.2"])
        #expect(try history(database).last == ["1.2", "index currency", MigrationFingerprint(of: text).rawValue])
        #expect(try database.advisoryLocks() == 0)
    }

    @Test func withoutTheDirectiveTheServerRefusesCreateIndexConcurrently() throws {
        let database = try PostgreSQLTestDatabase()
        try write("V1.2__index_currency.sql", "CREATE INDEX CONCURRENTLY orders_currency ON orders(currency);\n")
        let error = try #require(throws: MigrationRunError.self) { try launch(database, "1.2").0.run() }
        #expect((error.underlyingError as? PostgreSQLError)?.sqlState == "25001")
        #expect(try database.record(of: "service").level == "1.1")
    }

    @Test func aNoTransactionFileOfSeveralStatementsRunsAsOneImplicitTransactionAsTheDocsSay() throws {
        let database = try PostgreSQLTestDatabase()
        try write("V1.2__index_orders.sql", """
            -- store-migrations: no-transaction
            CREATE INDEX CONCURRENTLY orders_id ON orders(id);
            CREATE INDEX CONCURRENTLY orders_currency ON orders(currency);
            """)
        let error = try #require(throws: MigrationRunError.self) { try launch(database, "1.2").0.run() }
        #expect((error.underlyingError as? PostgreSQLError)?.sqlState == "25001")
        #expect(try database.record(of: "service").level == "1.1")
    }

    @Test func tablesOfThePreviousReleaseReadWithoutAChangeAndGainTheColumns() throws {
        let database = try PostgreSQLTestDatabase()
        // As the release before names and fingerprints left them.
        try database.connect().execute("""
            CREATE TABLE orders(id bigint PRIMARY KEY, currency char(3));
            CREATE TABLE store_migrations_levels(
                manager text PRIMARY KEY NOT NULL, level text, app_version text, baseline text, progress text);
            CREATE TABLE store_migrations_history(
                id bigserial PRIMARY KEY, manager text NOT NULL, version text NOT NULL,
                applied_at timestamptz NOT NULL, duration_seconds double precision NOT NULL);
            INSERT INTO store_migrations_levels VALUES ('service', '1.1', NULL, NULL, NULL);
            INSERT INTO store_migrations_history(manager, version, applied_at, duration_seconds) VALUES
                ('service', '1.0', now(), 0.01), ('service', '1.1', now(), 0.02);
            """)
        try write("V1.2__create_refunds.sql", "CREATE TABLE refunds(id bigint PRIMARY KEY);\n")
        let (coordinator, service) = try launch(database, "1.2", policy: .fail)
        let plan = try coordinator.plan()
        #expect(plan.managers[0].changedFingerprints == [])
        #expect(plan.steps.map(\.title) == ["service@1.2 (create refunds)"])
        #expect(try service.record().applied.map(\.fingerprint) == [nil, nil])
        _ = try coordinator.run()
        #expect(try history(database) == [
            ["1.0", nil, nil], ["1.1", nil, nil],
            ["1.2", "create refunds", MigrationFingerprint(of: "CREATE TABLE refunds(id bigint PRIMARY KEY);\n").rawValue],
        ])
    }
}
