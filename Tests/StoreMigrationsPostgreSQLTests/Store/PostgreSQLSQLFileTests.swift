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
