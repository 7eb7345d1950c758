import Foundation
import Testing
import StoreMigrations
import StoreMigrationsSQLite
import TestSupport

/// The README's fleet sample, as written there, on a folder of account databases: three with an
/// `orders` table and no records, one already at 2.1.
@Suite struct MigratingAFleetSampleTests {
    @Test func theReadmeSampleMigratesAFolderOfAccounts() throws {
        let folder = try TemporaryFolder()
        let accountsFolder = folder.url
        for key in ["acme", "globex", "initech"] {
            try SQLiteStore(url: folder.file("\(key).sqlite")).write { db in
                try db.execute("CREATE TABLE orders(id integer PRIMARY KEY, total integer)")
                try db.execute("INSERT INTO orders(total) VALUES (10), (20)")
            }
        }

        let fleet = MigrationFleet(appVersion: "2.1", tenants: SQLiteTenantFolder(folder: accountsFolder)) { tenant, coordinator in
            let orders = try coordinator.manager("orders", store: SQLiteStore(url: tenant.url!))
            orders.register("2.0") { db in try db.execute("ALTER TABLE orders ADD COLUMN reference text") }
            orders.register("2.1") { db in try db.execute("UPDATE orders SET reference = 'R' || id") }
        }
        let plan = try fleet.plan()
        #expect(plan.pending.map(\.steps.description) == ["[orders@2.0, orders@2.1]"])
        #expect(plan.toMigrate == 3 && plan.levels.map(\.tenants) == [3])

        let report = try fleet.migrate(FleetRunOptions(maxTenantsInFlight: 8, failureBudget: .failures(3), canary: .first(20)))
        #expect(report.migrated == 3 && report.succeeded)
        for key in ["acme", "globex", "initech"] {
            let references = try SQLiteStore(url: folder.file("\(key).sqlite")).read { db in
                try db.rows("SELECT reference FROM orders ORDER BY id").map { try $0[0] as String }
            }
            #expect(references == ["R1", "R2"])
        }
        #expect(try fleet.plan().isUpToDate)
    }
}
