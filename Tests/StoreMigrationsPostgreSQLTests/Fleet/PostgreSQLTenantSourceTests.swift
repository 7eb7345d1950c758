import Dispatch
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

    /// Sixteen tenants, eight in flight, a run's cap of two connections on a source made with
    /// eight, several workers' claims: the server, sampled while the run lasts, never sees more
    /// than two of the tenants' sessions, beside the session that lists the schemas (it has
    /// the tenants' application name too) and the claims' session; every tenant is migrated
    /// once; the source has its own cap again after the run.
    @Test func aRunsCapOnConnectionsHoldsOnTheServerWithMoreTenantsInFlight() throws {
        let database = try PostgreSQLTestDatabase()
        try Self.makeSchemas(16, in: database)
        let source = try PostgreSQLTenantSchemas(
            database.connectionString + " application_name=fleet-tenants", matching: "tenant\\_%", connections: 8)
        let claims = try PostgreSQLFleetClaims(database.connectionString + " application_name=fleet-claims", fleet: "capped")
        let pooled = MostSeen()
        let fleet = MigrationFleet(appVersion: "1.1", tenants: source, claims: claims) { tenant, coordinator in
            let app = try coordinator.manager("app", store: source.store(for: tenant, lockRetries: .off))
            app.register("1.0") { db in
                pooled.see(source.pool.openConnections)
                try db.execute("UPDATE item SET n = n + 1")
                // Long enough for the tenants in flight to pile up on the pool.
                try db.execute("SELECT pg_sleep(0.05)")
            }
            app.register("1.1") { db in
                pooled.see(source.pool.openConnections)
                try db.execute("CREATE TABLE tag(id int)")
            }
        }
        let sessions = SessionSampler(database: database, applicationNames: ["fleet-tenants", "fleet-claims"])
        let inFlight = MostSeen()
        let report = try fleet.migrate(FleetRunOptions(maxTenantsInFlight: 8, maxConnections: 2)) { event in
            inFlight.see(event.progress.running)
        }
        let most = try sessions.stop()
        #expect(report.migrated == 16 && report.succeeded)
        #expect(pooled.value <= 2)
        #expect(most["fleet-tenants", default: 0] <= 2 + 1, "two pooled sessions and the listing session")
        #expect(most["fleet-claims", default: 0] <= 1)
        #expect(sessions.samples > 0)
        // More tenants than connections were in flight at once: the caps are apart.
        #expect(inFlight.value > 2)
        #expect(source.connections == 8)
        let db = try database.connect()
        for index in 0..<16 {
            let schema = String(format: "tenant_%03d", index)
            #expect(try db.scalar("SELECT sum(n) FROM \(schema).item", as: Int.self) == 3, "\(schema): 1.0 ran once")
            let history = try db.rows("SELECT version FROM \(schema).store_migrations_history ORDER BY id").map { try $0[0] as String }
            #expect(history == ["1.0", "1.1"], "\(schema)")
        }
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

/// Samples, on a thread of its own until ``stop()``, how many sessions of each application name
/// the server has in a test's database; made once the first sample is taken.
final class SessionSampler: @unchecked Sendable {
    // @unchecked: `most`, `count`, `failure` and `isStopped` are only touched with `lock` held.
    private let lock = NSLock()
    private var most: [String: Int] = [:]
    private var count = 0
    private var failure: (any Error)?
    private var isStopped = false
    private let done = DispatchSemaphore(value: 0)

    init(database: PostgreSQLTestDatabase, applicationNames: [String]) {
        let sampled = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            defer { done.signal() }
            var isFirst = true
            defer { if isFirst { sampled.signal() } }
            do {
                let db = try database.connect()
                while !lock.withLock({ isStopped }) {
                    let rows = try db.rows(
                        """
                        SELECT application_name, count(*)::int8 FROM pg_stat_activity
                        WHERE datname = $1 AND application_name = ANY($2::text[]) GROUP BY application_name
                        """,
                        arguments: [.text(database.name), .text("{" + applicationNames.joined(separator: ",") + "}")])
                    let seen = try rows.map { (try $0[0] as String, try $0[1] as Int) }
                    lock.withLock {
                        count += 1
                        for (name, sessions) in seen { most[name] = max(most[name, default: 0], sessions) }
                    }
                    if isFirst {
                        isFirst = false
                        sampled.signal()
                    }
                }
            } catch {
                lock.withLock { failure = error }
            }
        }
        thread.start()
        sampled.wait()
    }

    /// How many samples were taken.
    var samples: Int { lock.withLock { count } }

    /// Stops sampling; the most sessions seen at once of each application name.
    func stop() throws -> [String: Int] {
        lock.withLock { isStopped = true }
        done.wait()
        return try lock.withLock {
            if let failure { throw failure }
            return most
        }
    }
}
