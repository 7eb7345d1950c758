// PostgreSQLStore exists where libpq is linked: Linux and macOS.
#if os(Linux) || os(macOS)
import Foundation
import StoreMigrations
import StoreMigrationsPostgreSQL

/// The services a replica runs, each a coordinator on one ``PostgreSQLStore``.
///
/// - `columns`: manager `service` with steps `1`…`N`. Step 1 creates `item(id)` and
///   `step_log(step, backend)`; every step `i` logs a row `(i, pg_backend_pid())`, sleeps
///   `sleepMilliseconds` in the server (`pg_sleep`: a statement a kill can land in), and adds
///   column `c<i>` to `item`. No step is idempotent: run twice, it fails (the column exists)
///   or logs twice.
/// - `index-builder`: manager `catalog`: `1.0` creates `product` with `rows` rows; `2.0`,
///   registered with `transaction: .none`, creates the marker file, holds the store's session
///   lock for `holdMilliseconds`, then runs `CREATE INDEX CONCURRENTLY`.
/// - `waiter`: manager `audit` on the same store, transactional steps `1.0` (creates
///   `audit_log`) and `2.0` (logs a row): they wait for the index builder's lock.
/// - `rolling`: manager `app` of a rolling deploy, as app `appVersion` (`--app-version`): app
///   1.0 registers `0.1` … `1.0`, app 2.0 those and `1.1` … `2.0`; each step logs a row
///   `(version, app)` to `runs`, so a version logged twice ran twice; an app-version hook.
/// - `batched`: manager `service`: `1` creates `item(id, value, calls)` with `rows` rows;
///   `2`, deferred, rewrites them in batches of `batchRows` with a transform that is not
///   idempotent (`value * 2 + 1`, `calls + 1`) and sleeps `rowSleepMicroseconds` a row, in the
///   batch's transaction, so that a kill can land mid-batch.
struct ReplicaScenario {
    enum Kind: String { case columns, indexBuilder = "index-builder", waiter, batched, rolling }

    var kind: Kind
    var connectionString: String
    var steps = 20
    var sleepMilliseconds = 0
    var rows = 100_000
    var holdMilliseconds = 300
    var marker: URL?
    var lockTimeout: Duration = .seconds(60)
    var batchRows = 20
    var rowSleepMicroseconds = 0

    var appVersion: Version = "100"

    /// The versions a `rolling` replica of app `appVersion` registers.
    static func rollingVersions(upTo appVersion: Version) -> [Version] {
        (1...20).compactMap { Version("\($0 / 10).\($0 % 10)") }.filter { $0 <= appVersion }
    }

    func coordinator() throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: appVersion)
        let store = try PostgreSQLStore(connectionString, lockTimeout: lockTimeout)
        switch kind {
        case .columns:
            let service = try coordinator.manager("service", store: store)
            let pause = Double(sleepMilliseconds) / 1_000
            for step in 1...steps {
                service.register(Version(integerLiteral: step)) { db in
                    if step == 1 {
                        try db.execute("CREATE TABLE item(id int PRIMARY KEY); CREATE TABLE step_log(step int NOT NULL, backend int NOT NULL)")
                    }
                    try db.execute("INSERT INTO step_log(step, backend) VALUES ($1, pg_backend_pid())", arguments: [.integer(Int64(step))])
                    if pause > 0 { try db.execute("SELECT pg_sleep($1)", arguments: [.double(pause)]) }
                    try db.execute("ALTER TABLE item ADD COLUMN c\(step) int")
                }
            }
        case .indexBuilder:
            let catalog = try coordinator.manager("catalog", store: store)
            let rows = rows, hold = holdMilliseconds, marker = marker
            catalog.register("1.0") { db in
                try db.execute("CREATE TABLE product(id bigint PRIMARY KEY, name text NOT NULL)")
                try db.execute("INSERT INTO product SELECT i, md5(i::text) FROM generate_series(1, $1) AS i", arguments: [.integer(Int64(rows))])
            }
            catalog.register("2.0", transaction: .none) { db in
                if let marker { try Data("\(db.serverProcessID)".utf8).write(to: marker) }
                Thread.sleep(forTimeInterval: Double(hold) / 1_000)
                try db.execute("CREATE INDEX CONCURRENTLY IF NOT EXISTS product_by_name ON product(name)")
            }
        case .batched:
            let service = try coordinator.manager("service", store: store)
            let rows = rows, pause = UInt32(rowSleepMicroseconds)
            service.register("1") { db in
                try db.execute("CREATE TABLE item(id bigint PRIMARY KEY, value bigint NOT NULL, calls int NOT NULL DEFAULT 0)")
                try db.execute("INSERT INTO item(id, value) SELECT i, i FROM generate_series(1, $1) AS i", arguments: [.integer(Int64(rows))])
            }
            service.registerResumable(
                "2", transformingRowsOf: "item", columns: ["value", "calls"], batchSize: .fixed(batchRows), deferred: true
            ) { row in
                if pause > 0 { usleep(pause) }
                let value: Int64 = try row["value"], calls: Int64 = try row["calls"]
                return ["value": .integer(value * 2 + 1), "calls": .integer(calls + 1)]
            }
        case .rolling:
            let app = try coordinator.manager("app", store: store)
            let appVersion = appVersion
            for version in Self.rollingVersions(upTo: appVersion) {
                app.register(version) { db in
                    try db.execute("CREATE TABLE IF NOT EXISTS runs(version text NOT NULL, app text NOT NULL)")
                    _ = try db.execute(
                        "INSERT INTO runs(version, app) VALUES ($1, $2)", arguments: [.text(version.description), .text(appVersion.description)])
                }
            }
            app.onAppVersionChange { _, _ in }
        case .waiter:
            let audit = try coordinator.manager("audit", store: store)
            audit.register("1.0") { db in
                try db.execute("CREATE TABLE IF NOT EXISTS audit_log(backend int NOT NULL, at timestamptz NOT NULL DEFAULT now())")
            }
            audit.register("2.0") { db in
                try db.execute("INSERT INTO audit_log(backend) VALUES (pg_backend_pid())")
            }
        }
        return coordinator
    }
}
#endif
