import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsPostgreSQL
import TestSupport

/// The fleet's up-to-date check over schemas, whose records the source reads ahead a page at a
/// time while the fleet plans the page before: every kind of tenant the check must tell apart,
/// side by side in one page, planned exactly as stores that read their records themselves plan.
@Suite struct PostgreSQLFleetCheckTests {
    static let keys = (0..<10).map { String(format: "tenant_%03d", $0) }

    static func template(_ store: @escaping @Sendable (Tenant) throws -> PostgreSQLStore) -> MigrationFleet.Template {
        { tenant, coordinator in
            let app = try coordinator.manager("app", store: store(tenant))
            app.register("1.0") { db in try db.execute("CREATE TABLE item(id int)") }
            app.register("1.1") { db in try db.execute("ALTER TABLE item ADD COLUMN n int") }
        }
    }

    /// Ten schemas migrated to 1.1 by a fleet run, each body's names its tenant's schema's.
    static func migrate(_ database: PostgreSQLTestDatabase) throws -> FleetReport {
        try database.connect().execute(keys.map { "CREATE SCHEMA \($0)" }.joined(separator: "; "))
        let source = try PostgreSQLTenantSchemas(database.connectionString, matching: "tenant\\_%")
        return try MigrationFleet(appVersion: "1.1", tenants: source, template: template { try source.store(for: $0) }).migrate()
    }

    /// Ten schemas at 1.1, then: tenant_002's record tables dropped, tenant_004's level damaged,
    /// tenant_006 put back to 1.0, tenant_008 at 1.2 (ahead of the app), tenant_009's tables
    /// those of a release before names, fingerprints and progress.
    @Test func aPageHoldingMissingDamagedBehindAheadAndOlderTablesIsPlannedAsEachStoreReadsIt() throws {
        let database = try PostgreSQLTestDatabase()
        let setup = try Self.migrate(database)
        #expect(setup.migrated == 10 && setup.succeeded)
        try database.connect().execute("""
            DROP TABLE tenant_002.store_migrations_levels, tenant_002.store_migrations_history;
            UPDATE tenant_004.store_migrations_levels SET level = 'one.one';
            DELETE FROM tenant_006.store_migrations_history WHERE version = '1.1';
            UPDATE tenant_006.store_migrations_levels SET level = '1.0';
            INSERT INTO tenant_008.store_migrations_history(manager, version, applied_at, duration_seconds)
                VALUES ('app', '1.2', now(), 0.01);
            UPDATE tenant_008.store_migrations_levels SET level = '1.2';
            ALTER TABLE tenant_009.store_migrations_levels DROP COLUMN progress;
            ALTER TABLE tenant_009.store_migrations_history DROP COLUMN name, DROP COLUMN fingerprint
            """)

        // Pages of three: the damaged schema in the middle of one, the others across pages.
        let source = try PostgreSQLTenantSchemas(database.connectionString, matching: "tenant\\_%", connections: 4, pageSize: 3)
        let plan = try MigrationFleet(appVersion: "1.1", tenants: source, template: Self.template { try source.store(for: $0) })
            .plan(examplesPerGroup: 10)

        #expect(plan.tenants == 10 && plan.upToDate == 6 && !plan.isUpToDate)
        #expect(plan.pending.map(\.description) == [
            "1 tenant: app@1.0, app@1.1 (tenant_002)",
            "1 tenant: app@1.1 (tenant_006)",
        ])
        #expect(plan.levels.map(\.description) == [
            "app none: 1 tenant (tenant_002)",
            "app 1.0: 1 tenant (tenant_006)",
            "app 1.1: 6 tenants (tenant_000, tenant_001, tenant_003, tenant_005, tenant_007, tenant_009)",
        ])
        #expect(plan.failures.map(\.tenant) == ["tenant_004", "tenant_008"])
        let damaged = try #require(plan.failures.first).message
        #expect(damaged.contains("one.one") && damaged.contains("schema tenant_004"), "\(damaged)")
        let ahead = try #require(plan.failures.last).message
        #expect(ahead.contains("1.2") && ahead.contains("schema tenant_008"), "\(ahead)")
        // Only the damaged schema's store read for itself, on a connection of the pool.
        #expect(source.pool.openConnections == 1)

        // The same fleet read one store at a time, each on a connection of its own, with no
        // read ahead: the same plan, failures and their messages included.
        let alone = try MigrationFleet(
            appVersion: "1.1", tenants: TenantList(keys: Self.keys), template: Self.template { try database.store(schema: $0.key) }
        ).plan(examplesPerGroup: 10)
        #expect(plan == alone)
    }

    /// A tenant's records read ahead are the ones its store reads itself, history order included,
    /// on every page of a walk that reads the next page ahead, however far behind the walk is.
    @Test func recordsReadAheadMatchTheStoresOwnReadOnEveryPage() throws {
        let database = try PostgreSQLTestDatabase()
        let setup = try Self.migrate(database)
        #expect(setup.succeeded)
        // Ids against the rows' order in one schema: the history is read in the ids' order.
        try database.connect().execute("UPDATE tenant_005.store_migrations_history SET id = 100 - id")
        let source = try PostgreSQLTenantSchemas(database.connectionString, matching: "tenant\\_%", pageSize: 4)
        var iterator = try source.makeTenantIterator()
        var seen: [String] = []
        while let tenant = try iterator.next() {
            seen.append(tenant.key)
            // Slower than the read ahead: the next page is read before this one is done.
            Thread.sleep(forTimeInterval: 0.01)
            let readAhead = try #require(source.pool.takeRecordsReadAhead(schema: tenant.key), "\(tenant.key)")
            #expect(readAhead == (try database.store(schema: tenant.key).readRecords()), "\(tenant.key)")
        }
        #expect(seen == Self.keys)
    }
}
