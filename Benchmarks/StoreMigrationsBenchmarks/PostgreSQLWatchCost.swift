import Foundation
import StoreMigrations
import StoreMigrationsPostgreSQL
#if canImport(CLibPQ)
import CLibPQ

/// `postgresql-watch`: what watching a step for table-lock waits costs (the second session that
/// bounds them and names who blocks), against the same steps with ``PostgreSQLStore/LockRetries/off``,
/// which runs no watch:
/// - 200 no-op steps: the watch is armed and disarmed, never connects (each step ends long
///   before half its 2 s lock timeout);
/// - 20 steps of 30 ms each under a 20 ms lock timeout: each step outlives half of it, so the
///   watch opens its session and polls;
/// - one step behind a `LOCK TABLE` held by another session, tried 5 times: the sessions the
///   store opened for it besides its own connection, counted by the server
///   (`pg_stat_database.sessions`, PostgreSQL 14+).
extension PostgreSQLWorkload {
    func watchCost(_ connection: String) throws -> [Measurement] {
        var results: [Measurement] = []
        let quick = self.steps < 1_000
        var run = 0
        func runSteps(_ count: Int, retries: PostgreSQLStore.LockRetries, body: @escaping @Sendable (PostgreSQLConnection) throws -> Void) throws {
            run += 1
            let coordinator = MigrationCoordinator(appVersion: Version(count))
            let store = try PostgreSQLStore(connection, schema: "watch_\(run)", lockRetries: retries)
            let manager = try coordinator.manager("watched", store: store)
            for version in 1...count { manager.register(Version(version)) { db in try body(db) } }
            let report = try coordinator.run()
            precondition(report.steps.count == count && report.succeeded)
        }

        let shortSteps = quick ? 20 : 200
        let (armed, unwatched) = try timer.compare(
            library: { try runSteps(shortSteps, retries: .standard) { _ in } },
            baseline: { try runSteps(shortSteps, retries: .off) { _ in } })
        results.append(Measurement(
            workload: "PostgreSQL: \(shortSteps) no-op steps, table-lock watch armed", metric: "lock retries .standard vs .off",
            runs: timer.runs, libraryMedian: armed.median, baselineMedian: unwatched.median, target: "(reported)",
            note: String(format: "%.1f µs a step", (armed.median - unwatched.median) / Double(shortSteps) * 1e6)))

        let longSteps = quick ? 5 : 20
        let short = PostgreSQLStore.LockRetries(lockTimeout: .milliseconds(20))
        let (watched, plain) = try timer.compare(
            library: { try runSteps(longSteps, retries: short) { db in try db.execute("SELECT pg_sleep(0.03)") } },
            baseline: { try runSteps(longSteps, retries: .off) { db in try db.execute("SELECT pg_sleep(0.03)") } })
        results.append(Measurement(
            workload: "PostgreSQL: \(longSteps) steps of 30 ms, table-lock watch connected", metric: "lock timeout 20 ms vs .off",
            runs: timer.runs, libraryMedian: watched.median, baselineMedian: plain.median, target: "(reported)",
            note: String(format: "%.2f ms a step", (watched.median - plain.median) / Double(longSteps) * 1e3)))

        results.append(try sessionsOfARetriedStep(connection))
        return results
    }

    /// One step behind a table lock, tried 5 times: how many sessions the store opened for it.
    private func sessionsOfARetriedStep(_ connection: String) throws -> Measurement {
        let holder = try RawLibPQ(connection)
        let admin = try RawLibPQ(connection)
        try admin.execute("DROP TABLE IF EXISTS watch_locked; CREATE TABLE watch_locked(id int)")
        let retries = PostgreSQLStore.LockRetries(lockTimeout: .milliseconds(100), retries: 4, backoff: .milliseconds(10))
        let store = try PostgreSQLStore(connection, schema: "watch_retried", lockRetries: retries)
        _ = try store.readRecords()
        func sessions() throws -> Int {
            // Counted when a session ends and its statistics are flushed: past a second.
            Thread.sleep(forTimeInterval: 1.5)
            _ = try admin.rows("SELECT pg_stat_clear_snapshot()")
            let rows = try admin.rows("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
            return (rows.first?.first ?? nil).flatMap { Int($0) } ?? -1
        }
        let before = try sessions()
        try holder.execute("BEGIN; LOCK TABLE watch_locked IN ACCESS EXCLUSIVE MODE")
        let coordinator = MigrationCoordinator(appVersion: "1")
        try coordinator.manager("retried", store: store).register("1") { db in try db.execute("ALTER TABLE watch_locked ADD COLUMN x int") }
        let start = ContinuousClock.now
        let failure = (try? coordinator.run()) == nil
        let elapsed = ContinuousClock.now - start
        precondition(failure, "the step must time out behind the table lock")
        try holder.execute("ROLLBACK")
        let opened = try sessions() - before
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Measurement(
            workload: "PostgreSQL: one step behind a table lock, 5 tries", metric: "time to its tableLockTimeout",
            runs: 1, libraryMedian: seconds, baselineMedian: nil, target: "(reported)",
            note: "\(opened) watch session\(opened == 1 ? "" : "s") opened for the step")
    }
}
#endif
