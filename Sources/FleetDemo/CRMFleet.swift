// PostgreSQLStore exists where libpq is linked: Linux and macOS.
#if os(Linux) || os(macOS)
import Foundation
import StoreMigrations
import StoreMigrationsPostgreSQL

/// The fleet the demo migrates: a CRM service with a schema per customer (`tenant_0000`…), each
/// with a `customer` table of 100 rows at release 1.0; release 2.1 adds a data change and a DDL
/// change, and its workers share their claims in the database's `public` schema.
enum CRMFleet {
    static let appVersion: Version = "2.1"

    /// The fleet at `appVersion`, its workers sharing claims under the name `worker` when given.
    /// A worker that `stalls` hangs in the first 2.1 step it runs, its transaction open: the demo
    /// kills it there, whatever the machine's speed.
    static func fleet(
        connectionString: String, appVersion: Version = appVersion, worker: String? = nil, stalls: Bool = false
    ) throws -> MigrationFleet {
        let tenants = try PostgreSQLTenantSchemas(connectionString, matching: "tenant\\_%", connections: 4)
        let claims = try worker.map { try PostgreSQLFleetClaims(connectionString, fleet: "crm", worker: $0) }
        return MigrationFleet(appVersion: appVersion, tenants: tenants, claims: claims) { tenant, coordinator in
            let crm = try coordinator.manager("crm", store: tenants.store(for: tenant))
            crm.register("1.0") { db in
                try db.execute("""
                    CREATE TABLE customer(id serial PRIMARY KEY, email text NOT NULL, plan text);
                    INSERT INTO customer(email) SELECT 'User' || i || '@Example.COM' FROM generate_series(1, 100) i
                    """)
            }
            crm.register("2.0") { db in try db.execute("UPDATE customer SET plan = 'free', email = lower(email)") }
            crm.register("2.1") { db in
                try db.execute("ALTER TABLE customer ADD COLUMN is_active boolean NOT NULL DEFAULT true")
                if stalls { Thread.sleep(forTimeInterval: 3_600) }
            }
        }
    }

    /// `count` tenant schemas at release 1.0, as the service's sign-ups left them.
    static func makeTenants(_ count: Int, connectionString: String) throws {
        let admin = try PostgreSQLStore(connectionString)
        for start in stride(from: 0, to: count, by: 200) {
            let sql = (start..<min(count, start + 200)).map { String(format: "CREATE SCHEMA tenant_%04d", $0) }.joined(separator: "; ")
            try admin.withSession { try $0.execute(sql) }
        }
        let report = try fleet(connectionString: connectionString, appVersion: "1.0").migrate(FleetRunOptions(maxTenantsInFlight: 8))
        guard report.succeeded else { throw DemoFailure("release 1.0 did not reach every tenant: \(report)") }
    }
}

struct DemoFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
#endif
