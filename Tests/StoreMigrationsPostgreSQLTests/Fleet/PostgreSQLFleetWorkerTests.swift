import Foundation
import Testing
@testable import FleetWorker
@testable import StoreMigrations
@testable import StoreMigrationsPostgreSQL
import TestSupport

/// Several workers, one fleet, through PostgreSQL claims: four `FleetWorker` processes on a
/// fleet of tenant schemas, killed at seeded random moments and restarted; and a tenant that
/// fails, named by the report and by the status.
@Suite(.serialized) struct PostgreSQLFleetWorkerTests {
    /// The fleet the workers share: schemas `tenant_000`… with `item(id, n)` of three rows and
    /// an empty `step_log(version)`.
    static func makeFleet(_ count: Int, in database: PostgreSQLTestDatabase) throws {
        let sql = (0..<count).map { index in
            let schema = String(format: "tenant_%03d", index)
            return "CREATE SCHEMA \(schema); CREATE TABLE \(schema).item(id int PRIMARY KEY, n int NOT NULL DEFAULT 0); "
                + "INSERT INTO \(schema).item(id) SELECT generate_series(1, 3); CREATE TABLE \(schema).step_log(version int NOT NULL)"
        }.joined(separator: ";\n")
        try database.connect().execute(sql)
    }

    /// Each tenant's records and data agree at `version`: every migration up to it in the history
    /// once, the level at it, each step's counter added once to every row, each step logged once.
    static func checkEveryTenant(of count: Int, at version: Int, in database: PostgreSQLTestDatabase, failing: String? = nil) throws {
        let db = try database.connect()
        for index in 0..<count {
            let schema = String(format: "tenant_%03d", index)
            let expected = schema == failing ? version - 1 : version
            let history = try db.rows("SELECT version FROM \(schema).store_migrations_history ORDER BY id").map { try $0[0] as String }
            #expect(history == (0..<expected).map { String($0 + 1) }, "\(schema): history")
            let logged = try db.rows("SELECT version FROM \(schema).step_log ORDER BY version").map { try $0[0] as Int }
            #expect(logged == Array((0..<expected).map { $0 + 1 }), "\(schema): a step ran twice or not at all")
            let counters = try db.rows("SELECT n FROM \(schema).item ORDER BY id").map { try $0[0] as Int }
            #expect(counters == [expected, expected, expected], "\(schema): counters")
        }
    }

    /// Rounds of four workers, each round one app version more, killed at seeded random moments
    /// and restarted until `FLEET_KILLS` kills (50 by default) have landed; after each round
    /// every tenant agrees with its records; a last run in this process finds every tenant at
    /// the target. `FLEET_TENANTS` sets the fleet's size (40 by default; 1000 for a soak),
    /// `FLEET_SEED` replays a run (its seed is in every failure's message).
    @Test func fourWorkersKilledAtRandomMigrateEachTenantExactlyOnce() throws {
        let tenants = environmentCount("FLEET_TENANTS", default: 40)
        let killsWanted = environmentCount("FLEET_KILLS", default: 50)
        let seed = environmentSeed("FLEET_SEED")
        var random = SeededGenerator(seed: seed)
        let database = try PostgreSQLTestDatabase()
        try Self.makeFleet(tenants, in: database)
        let worker = try builtExecutable(named: "FleetWorker", override: "FLEET_WORKER")
        let logs = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-worker-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: logs) }

        var kills = 0
        var version = 0
        var takenOver = 0
        while kills < killsWanted || version < 2 {
            version += 1
            try #require(version <= 60, "only \(kills) kills landed in 60 rounds (seed \(seed))")
            let arguments = { (name: String) in
                [database.connectionString, "--app-version", String(version), "--worker", name, "--sleep-ms", "30"]
            }
            var workers = (0..<4).map { index in (name: "w\(index)", process: try? ChildProcess(executable: worker, arguments: arguments("w\(index)"), logs: logs)) }
            var killsThisRound = 0
            var ended = Set<Int>()
            let deadline = ContinuousClock.now + .seconds(eventWaitBound)
            while ended.count < 4 {
                try #require(ContinuousClock.now < deadline, "round \(version) did not end (seed \(seed))")
                Thread.sleep(forTimeInterval: Double(Int.random(in: 20...200, using: &random)) / 1_000)
                for index in 0..<4 where !ended.contains(index) {
                    guard let exit = try #require(workers[index].process).wait(timeout: 0) else { continue }
                    #expect(exit.succeeded, "round \(version), worker \(workers[index].name): \(exit)")
                    ended.insert(index)
                }
                let running = (0..<4).filter { !ended.contains($0) }
                guard killsThisRound < 6, kills < killsWanted, !running.isEmpty else { continue }
                let victim = running.randomElement(using: &random)!
                let exit = try #require(workers[victim].process).kill()
                guard exit.signal == SIGKILL else { continue }
                kills += 1
                killsThisRound += 1
                workers[victim].process = try ChildProcess(executable: worker, arguments: arguments(workers[victim].name), logs: logs)
            }
            try Self.checkEveryTenant(of: tenants, at: version, in: database)
            let status = try MigrationFleet(
                appVersion: Version(version), tenants: TenantList([]),
                claims: PostgreSQLFleetClaims(database.connectionString, fleet: "test"), template: { _, _ in }
            ).status()
            #expect(status.running == 0 && status.failed == 0, "round \(version): \(status)")
            takenOver += try database.connect().scalar(
                "SELECT count(*) FROM store_migrations_fleet WHERE app_version = $1 AND attempts > 1",
                arguments: [.text(String(version))], as: Int.self) ?? 0
        }
        #expect(kills >= killsWanted)
        // Killed workers' tenants were taken over by the others or by their restarts.
        #expect(takenOver > 0)
        let last = try FleetWorker.fleet(
            database.connectionString, appVersion: version, worker: "final", sleepMilliseconds: 0, failing: nil, connections: 2
        ).migrate()
        #expect(last.upToDate == tenants && last.succeeded, "\(last)")
    }

    /// Two workers in this process on one fleet, one tenant's last migration throwing: every
    /// other tenant is migrated once, one worker's report names the failed tenant, and the status,
    /// read by a third fleet object, names it with its worker and error.
    @Test func aTenantThatFailsIsNamedByTheReportAndByTheStatus() throws {
        let database = try PostgreSQLTestDatabase()
        try Self.makeFleet(12, in: database)
        let reports = LockedList<FleetReport>()
        let group = DispatchGroup()
        for name in ["a", "b"] {
            let fleet = try FleetWorker.fleet(
                database.connectionString, appVersion: 2, worker: name, sleepMilliseconds: 20, failing: "tenant_005", connections: 2)
            DispatchQueue.global().async(group: group) {
                reports.append(try! fleet.migrate(FleetRunOptions(maxTenantsInFlight: 3)))
            }
        }
        #expect(group.wait(timeout: .now() + eventWaitBound) == .success)
        try Self.checkEveryTenant(of: 12, at: 2, in: database, failing: "tenant_005")
        let all = reports.items
        #expect(all.flatMap(\.failures).map(\.tenant.key) == ["tenant_005"])
        #expect(all.flatMap(\.failures).first?.message.contains("app@2 failed on purpose") == true)
        #expect(all.reduce(0) { $0 + $1.migrated } == 11)
        let status = try MigrationFleet(
            appVersion: 2, tenants: TenantList([]), claims: PostgreSQLFleetClaims(database.connectionString, fleet: "test"),
            template: { _, _ in }
        ).status()
        #expect(status.migrated == 11 && status.failed == 1 && status.running == 0)
        // On a busy machine one worker may take every tenant before the other starts: the status
        // names whoever did, and their counts add up to the fleet.
        #expect(Set(status.workers.map(\.worker)).isSubset(of: ["a", "b"]) && !status.workers.isEmpty)
        #expect(status.workers.reduce(0) { $0 + $1.migrated } == 11 && status.workers.reduce(0) { $0 + $1.failed } == 1)
        let failed = try #require(status.entries.first)
        #expect(failed.tenant == "tenant_005" && failed.state == .failed && failed.message?.contains("failed on purpose") == true)
        #expect(status.description.contains("failed tenant_005: "))
    }
}

/// Values appended from several threads.
final class LockedList<Element>: @unchecked Sendable {
    // `lock` guards `elements`.
    private let lock = NSLock()
    private var elements: [Element] = []
    func append(_ element: Element) { lock.withLock { elements.append(element) } }
    var items: [Element] { lock.withLock { elements } }
}
