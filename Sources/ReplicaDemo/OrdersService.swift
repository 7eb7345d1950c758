// PostgreSQLStore exists where libpq is linked: Linux and macOS.
#if os(Linux) || os(macOS)
import Foundation
import StoreMigrations
import StoreMigrationsPostgreSQL

/// The service whose replicas the demo starts: an orders service at version 2.0, migrating its
/// PostgreSQL database at startup. Version 2.0 keeps customers in `customer_key`; dropping the
/// `customer` column that 1.x replicas still read is a post-deploy migration, run by the release
/// job once no 1.x replica serves (`replica-demo --database URL migrate --post-deploy`).
enum OrdersService {
    static let appVersion: Version = "2.0"

    static func coordinator(connectionString: String) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: appVersion)
        let orders = try coordinator.manager("orders", store: PostgreSQLStore(connectionString))
        orders.register("1.0") { db in
            try db.execute("CREATE TABLE orders(id bigint PRIMARY KEY, customer text NOT NULL, cents bigint NOT NULL)")
            try db.copy(into: "orders", columns: ["id", "customer", "cents"]) { writer in
                for id in 1...20_000 {
                    try writer.append([.integer(Int64(id)), .text("customer-\(id % 700)"), .integer(Int64(id * 37 % 10_000))])
                }
            }
        }
        orders.register("1.1") { db in
            try db.execute("ALTER TABLE orders ADD COLUMN currency char(3) NOT NULL DEFAULT 'EUR'")
        }
        orders.register("1.2", transaction: .none) { db in
            try db.execute("CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_by_customer ON orders(customer)")
        }
        orders.register("2.0") { db in
            try db.execute("ALTER TABLE orders ADD COLUMN reference text")
            try db.transformRows(in: "orders", columns: ["reference"]) { row in
                let id: Int = try row["id"]
                return ["reference": .text(String(format: "ORD-%06d", id))]
            }
            try db.execute("ALTER TABLE orders ALTER COLUMN reference SET NOT NULL")
            try db.execute("ALTER TABLE orders ADD COLUMN customer_key text")
            try db.execute("UPDATE orders SET customer_key = customer")
        }
        orders.register("2.0-1", options: .postDeploy) { db in
            try db.execute("ALTER TABLE orders DROP COLUMN customer")
        }
        return coordinator
    }
}
#endif
