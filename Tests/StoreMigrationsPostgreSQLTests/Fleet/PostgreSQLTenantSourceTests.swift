import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsPostgreSQL
import TestSupport

/// The PostgreSQL tenant sources: schemas by pattern or by a tenants table, databases of a
/// server; read a page at a time; stores sharing a pool of connections per database; records
/// read ahead for the fleet's plan.
@Suite struct PostgreSQLTenantSourceTests {
    /// A fleet of `count` tenant schemas named `tenant_000`…, each with an `item` table of `rows` rows.
    static func makeSchemas(_ count: Int, in database: PostgreSQLTestDatabase, rows: Int = 3) throws {
        let sql = (0..<count).map { index in
            let schema = String(format: "tenant_%03d", index)
            return "CREATE SCHEMA \(schema); CREATE TABLE \(schema).item(id int PRIMARY KEY, n int NOT NULL DEFAULT 0); "
                + "INSERT INTO \(schema).item(id) SELECT generate_series(1, \(rows))"
        }.joined(separator: ";\n")
        try database.connect().execute(sql)
    }

    static func keys(of source: some TenantSource) throws -> [String] {
        var iterator = try source.makeTenantIterator()
        var keys: [String] = []
        while let tenant = try iterator.next() { keys.append(tenant.key) }
        return keys
    }

    @Test func schemasByPatternComeInNameOrderAcrossPages() throws {
        let database = try PostgreSQLTestDatabase()
        try Self.makeSchemas(7, in: database)
        try database.connect().execute("CREATE SCHEMA other; CREATE SCHEMA \"tenant_x'quote\"")
        let source = try PostgreSQLTenantSchemas(database.connectionString, matching: "tenant\\_%", pageSize: 3)
        #expect(try Self.keys(of: source) == (0..<7).map { String(format: "tenant_%03d", $0) } + ["tenant_x'quote"])
        // The same tenants on every walk.
        #expect(try Self.keys(of: source) == Self.keys(of: source))
        #expect(source.description.contains("LIKE 'tenant\\_%'"))
    }

    @Test func schemasFromATenantsTableCarryTheirGroup() throws {
        let database = try PostgreSQLTestDatabase()
        try Self.makeSchemas(4, in: database)
        try database.connect().execute("""
            CREATE TABLE customers(schema_name text PRIMARY KEY, region text);
            INSERT INTO customers VALUES ('tenant_002', 'eu'), ('tenant_000', 'us'), ('tenant_003', NULL)
            """)
        let source = try PostgreSQLTenantSchemas(database.connectionString, table: "public.customers", groupColumn: "region", pageSize: 2)
        var iterator = try source.makeTenantIterator()
        var tenants: [Tenant] = []
        while let tenant = try iterator.next() { tenants.append(tenant) }
        #expect(tenants == [Tenant("tenant_000", group: "us"), Tenant("tenant_002", group: "eu"), Tenant("tenant_003")])
    }

    @Test func databasesOfAServerMatchingAPattern() throws {
        let database = try PostgreSQLTestDatabase()
        let prefix = "fleetdb_" + database.name.dropFirst(5)
        let admin = try database.server.connect()
        for index in 0..<3 { try admin.execute("CREATE DATABASE \(prefix)_\(index)") }
        let source = try PostgreSQLTenantDatabases(database.connectionString, matching: prefix + "\\_%", pageSize: 2)
        #expect(try Self.keys(of: source) == (0..<3).map { "\(prefix)_\($0)" })
        let fleet = MigrationFleet(appVersion: "1.0", tenants: source) { tenant, coordinator in
            let app = try coordinator.manager("app", store: source.store(for: tenant, lockRetries: .off))
            app.register("1.0") { db in try db.execute("CREATE TABLE note(id int)") }
        }
        let report = try fleet.migrate()
        #expect(report.migrated == 3 && report.succeeded)
        for index in 0..<3 {
            let db = try database.server.connect(database: "\(prefix)_\(index)")
            #expect(try db.scalar("SELECT level FROM store_migrations_levels WHERE manager = 'app'", as: String.self) == "1.0")
            #expect(try db.tableExists("note"))
        }
    }

    /// Twelve tenants, six in flight, two connections: the stores wait for the pool's, and each
    /// body's unqualified names are its tenant's schema.
    @Test func tenantsShareAPoolOfConnectionsCappedApartFromTenantsInFlight() throws {
        let database = try PostgreSQLTestDatabase()
        try Self.makeSchemas(12, in: database)
        let source = try PostgreSQLTenantSchemas(database.connectionString, matching: "tenant\\_%", connections: 2)
        let most = MostSeen()
        let fleet = MigrationFleet(appVersion: "1.1", tenants: source) { tenant, coordinator in
            let app = try coordinator.manager("app", store: source.store(for: tenant, lockRetries: .off))
            app.register("1.0") { db in
                most.see(source.pool.openConnections)
                try db.execute("UPDATE item SET n = n + 1")
                Thread.sleep(forTimeInterval: 0.1)
            }
            app.register("1.1") { db in
                most.see(source.pool.openConnections)
                try db.execute("CREATE TABLE tag(id int)")
            }
        }
        let inFlight = MostSeen()
        let report = try fleet.migrate(FleetRunOptions(maxTenantsInFlight: 6)) { event in inFlight.see(event.progress.running) }
        #expect(report.migrated == 12 && report.succeeded)
        #expect(most.value <= 2)
        // More tenants than connections were in flight at once: the caps are apart.
        #expect(inFlight.value > 2)
        #expect(source.pool.openConnections <= 2)
        let db = try database.connect()
        for index in 0..<12 {
            let schema = String(format: "tenant_%03d", index)
            #expect(try db.scalar("SELECT sum(n) FROM \(schema).item", as: Int.self) == 3)
            #expect(try database.tables(in: schema) == ["item", "store_migrations_history", "store_migrations_levels", "tag"])
        }
        #expect(try database.tables(in: "public").isEmpty)
    }

    /// The plan of a fleet of schemas reads the records ahead, a page of schemas in a query: no
    /// tenant's store opens a connection for it; and what it read is what each store reads.
    @Test func theFleetPlanReadsRecordsAheadForManySchemasAtOnce() throws {
        let database = try PostgreSQLTestDatabase()
        try Self.makeSchemas(30, in: database)
        let source = try PostgreSQLTenantSchemas(database.connectionString, matching: "tenant\\_%", connections: 4, pageSize: 8)
        let template: MigrationFleet.Template = { tenant, coordinator in
            let app = try coordinator.manager("app", store: source.store(for: tenant, lockRetries: .off))
            app.register("1.0") { db in try db.execute("UPDATE item SET n = n + 1") }
            // Only half the fleet takes 1.1 on its first run: levels differ across the fleet.
            if tenant.key < "tenant_015" {
                app.register("1.1") { db in try db.execute("CREATE TABLE tag(id int)") }
            }
        }
        // Schema tenant_029 never migrated: no record tables at all.
        let first = try MigrationFleet(appVersion: "1.1", tenants: TenantList(keys: (0..<29).map { String(format: "tenant_%03d", $0) }),
                                       template: template).migrate()
        #expect(first.migrated == 29)
        let freshSource = try PostgreSQLTenantSchemas(database.connectionString, matching: "tenant\\_%", connections: 4, pageSize: 8)
        let fresh: MigrationFleet.Template = { tenant, coordinator in
            let app = try coordinator.manager("app", store: freshSource.store(for: tenant, lockRetries: .off))
            app.register("1.0") { _ in }
            app.register("1.1") { _ in }
        }
        let plan = try MigrationFleet(appVersion: "1.1", tenants: freshSource, template: fresh).plan()
        #expect(freshSource.pool.openConnections == 0)
        #expect(plan.tenants == 30 && plan.upToDate == 15)
        #expect(plan.pending.map(\.tenants) == [14, 1])
        #expect(plan.levels.map(\.description).contains("app 1.0: 14 tenants (tenant_015, tenant_016, tenant_017, tenant_018, tenant_019 and 9 more)"))
        // Each schema's records read ahead are the ones its store reads itself.
        var iterator = try freshSource.makeTenantIterator()
        while let tenant = try iterator.next() {
            let readAhead = try #require(freshSource.pool.takeRecordsReadAhead(schema: tenant.key))
            #expect(readAhead == (try database.store(schema: tenant.key).readRecords()), "\(tenant.key)")
        }
    }
}

/// The largest value seen, across threads.
final class MostSeen: @unchecked Sendable {
    // `lock` guards `largest`.
    private let lock = NSLock()
    private var largest = 0
    func see(_ value: Int) { lock.withLock { largest = max(largest, value) } }
    var value: Int { lock.withLock { largest } }
}
