import Dispatch
import Foundation
import Testing
import StoreMigrations
import StoreMigrationsPostgreSQL
import TestSupport

// The README's PostgreSQL fleet sample, as written there (between the markers below; the test
// `theSampleIsTheReadmes` holds the two texts equal), run by two workers at once on the tests'
// server. The README's other samples are run by `IntegrationTests/ReadmeTests`, which links no libpq.

// README sample: begin
/// Run by every worker, on every machine, at each release.
func migrateTenants(database: String) throws -> FleetReport {
    let tenants = try PostgreSQLTenantSchemas(database, matching: "tenant\\_%", connections: 8)
    let claims = try PostgreSQLFleetClaims(database, fleet: "saas")
    let fleet = MigrationFleet(appVersion: "2.1", tenants: tenants, claims: claims) { tenant, coordinator in
        let crm = try coordinator.manager("crm", store: tenants.store(for: tenant))
        crm.register("2.0") { db in try db.execute("ALTER TABLE customer ADD COLUMN email text") }
        crm.register("2.1") { db in try db.execute("UPDATE customer SET email = lower(name) || '@example.com'") }
    }
    // Sixteen tenants in flight share four connections: each waits for one while all are in use.
    let report = try fleet.migrate(FleetRunOptions(maxTenantsInFlight: 16, maxConnections: 4))
    print(try fleet.status())   // who did what, read from the claims: the same from any machine
    return report
}
// README sample: end

@Suite struct PostgreSQLFleetReadmeTests {
    /// Two workers run the sample at once on twenty tenant schemas: each tenant migrated once,
    /// by one of them, and the claims say so.
    @Test func twoWorkersRunningTheSampleMigrateEachTenantOnce() throws {
        let database = try PostgreSQLTestDatabase()
        let keys = (0..<20).map { String(format: "tenant_%02d", $0) }
        try database.connect().execute(keys.map { schema in
            "CREATE SCHEMA \(schema); CREATE TABLE \(schema).customer(id int PRIMARY KEY, name text NOT NULL); "
                + "INSERT INTO \(schema).customer VALUES (1, 'Ada'), (2, 'Grace')"
        }.joined(separator: ";\n"))

        let results = (0..<2).map { _ in Locked<Result<FleetReport, any Error>?>(nil) }
        let workers = DispatchGroup()
        for result in results {
            workers.enter()
            Thread {
                result.value = Result { try migrateTenants(database: database.connectionString) }
                workers.leave()
            }.start()
        }
        workers.wait()

        let reports = try results.map { try #require($0.value).get() }
        #expect(reports.allSatisfy { $0.succeeded })
        #expect(reports.reduce(0) { $0 + $1.migrated } == 20, "each tenant migrated by one worker")
        let db = try database.connect()
        for schema in keys {
            let emails = try db.rows("SELECT email FROM \(schema).customer ORDER BY id").map { try $0[0] as String }
            #expect(emails == ["ada@example.com", "grace@example.com"], "\(schema)")
            let history = try db.rows("SELECT version FROM \(schema).store_migrations_history ORDER BY id").map { try $0[0] as String }
            #expect(history == ["2.0", "2.1"], "\(schema): each step once")
        }
        #expect(try db.scalar(
            "SELECT count(*) FROM store_migrations_fleet WHERE fleet = 'saas' AND state = 'migrated'", as: Int.self) == 20)
    }

    @Test func theSampleIsTheReadmes() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.range(of: "### PostgreSQL fleets"))
        let block = try #require(readme[section.upperBound...].range(of: "```swift\n"))
        let end = try #require(readme[block.upperBound...].range(of: "```"))
        let readmeLines = readme[block.upperBound..<end.lowerBound].split(separator: "\n")
            .filter { !$0.hasPrefix("import ") }.map(String.init)
        let source = try String(contentsOf: URL(fileURLWithPath: #filePath), encoding: .utf8)
        let begin = try #require(source.range(of: "// README sample: begin\n"))
        let stop = try #require(source.range(of: "// README sample: end", range: begin.upperBound..<source.endIndex))
        let sampleLines = source[begin.upperBound..<stop.lowerBound].split(separator: "\n").map(String.init)
        #expect(readmeLines == sampleLines)
    }
}
