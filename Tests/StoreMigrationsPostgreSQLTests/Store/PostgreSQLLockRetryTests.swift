import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsPostgreSQL
import TestSupport

/// A migration's `ALTER TABLE` behind a long `SELECT` (issue 20, item 5): under a short
/// `lock_timeout` it gives up its place in the lock queue, so the service's queries on the table
/// keep completing, and tries again until the `SELECT` ends, or fails naming it.
@Suite struct PostgreSQLLockRetryTests {
    let database: PostgreSQLTestDatabase
    let admin: PostgreSQLConnection

    init() throws {
        database = try PostgreSQLTestDatabase()
        admin = try database.connect()
        try admin.execute("CREATE TABLE orders(id int PRIMARY KEY, total int); INSERT INTO orders SELECT g, g FROM generate_series(1, 100) g")
    }

    @Test func theDefaultIsAShortLockTimeoutRetriedWithBackoff() throws {
        let store = try database.store()
        #expect(store.lockRetries == .standard)
        #expect(store.lockRetries.lockTimeout == .seconds(2))
        #expect(store.lockRetries.retries == 5)
        #expect((1...7).map { store.lockRetries.pause(after: $0) }
            == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16), .seconds(30)])
        #expect(PostgreSQLStore.LockRetries.off.lockTimeout == nil)
    }

    @Test func anAlterTableBehindALongSelectRetriesWhileQueriesCompleteAndRunsOnceTheSelectEnds() throws {
        let select = try LongSelect(database)
        let store = try PostgreSQLStore(
            database.connectionString, lockRetries: .init(
                lockTimeout: .milliseconds(200), retries: 100_000, backoff: .milliseconds(20), maximumBackoff: .milliseconds(100)))
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let orders = try coordinator.manager("orders", store: store)
        orders.register("2.0") { db in try db.execute("ALTER TABLE orders ADD COLUMN currency char(3)") }
        let waits = WaitLog()
        coordinator.observer = { event in if case let .waiting(_, wait) = event { waits.append(wait) } }
        let run = BackgroundRun(coordinator)

        try #require(waitUntil { waits.count >= 1 || run.isDone }, "the ALTER times out behind the SELECT")
        // The service's own queries on the table: each completes while the ALTER retries
        // (without the time-out, every one would queue behind the ALTER until the SELECT ends).
        let traffic = try database.connect()
        var latencies: [Duration] = []
        for _ in 0..<20 {
            let start = ContinuousClock.now
            #expect(try traffic.scalar("SELECT count(*) FROM orders", as: Int.self) == 100)
            latencies.append(ContinuousClock.now - start)
        }
        #expect(latencies.count == 20)
        try #require(waitUntil { waits.count >= 3 || run.isDone }, "the ALTER tries again")
        #expect(!run.isDone, "nothing completes the step while the SELECT holds the table")
        for wait in waits.all {
            #expect(wait.holderProcessID == select.pid, "\(wait)")
            #expect(wait.lock.contains("ALTER TABLE orders ADD COLUMN currency"), "\(wait)")
        }

        select.cancel(from: admin)
        let report = try run.result()
        #expect(report.steps.map(\.outcome) == [.applied])
        #expect(try database.columns(of: "orders") == ["id", "total", "currency"])
        #expect(try database.record(of: "orders").history == ["2.0"])
        #expect(try database.advisoryLocks() == 0)
        let sorted = latencies.sorted()
        print("PostgreSQLLockRetryTests: \(waits.count) lock time-outs; 20 queries during the retries, median \(sorted[10]), slowest \(sorted[19])")
    }

    @Test func anAlterTableStillBlockedAfterItsRetriesFailsNamingTheBlockingQuery() throws {
        let select = try LongSelect(database)
        defer { select.cancel(from: admin) }
        let store = try PostgreSQLStore(
            database.connectionString, lockRetries: .init(lockTimeout: .seconds(1), retries: 2, backoff: .milliseconds(20)))
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let orders = try coordinator.manager("orders", store: store)
        let attempts = CallCounter()
        orders.register("2.0") { db in
            attempts.hit("2.0")
            try db.execute("ALTER TABLE orders ADD COLUMN currency char(3)")
        }
        let waits = WaitLog()
        coordinator.observer = { event in if case let .waiting(_, wait) = event { waits.append(wait) } }

        let error = try #require(throws: MigrationRunError.self) { try coordinator.run() }
        let failure = try #require(error.underlyingError as? PostgreSQLError)
        #expect(failure.kind == .tableLockTimeout(blockerPID: select.pid, blockerQuery: LongSelect.sql, attempts: 3))
        #expect(attempts["2.0"] == 3)
        #expect(waits.all.map(\.holderProcessID) == [select.pid, select.pid], "a wait reported before each retry: \(waits.all)")
        #expect(failure.sqlState == "55P03")
        #expect(failure.migration == MigrationReference(manager: "orders", version: "2.0"))
        #expect(failure.description.contains("in each of 3 attempts"))
        #expect(failure.description.contains("held by the server process \(select.pid), running `\(LongSelect.sql)`"))
        #expect(failure.description.hasSuffix(
            "run the migrations again once the server process \(select.pid) has finished its query."))
        #expect(try database.columns(of: "orders") == ["id", "total"])
        // The record tables the step created went with its transaction.
        #expect(try database.tables() == ["orders"])
        #expect(try database.advisoryLocks() == 0)
    }

    /// A row lock is no table lock: an `UPDATE` behind a row another session holds waits for it,
    /// past the store's lock timeout, in its first and only attempt.
    @Test func anUpdateBehindARowLockWaitsPastTheLockTimeoutInOneAttempt() throws {
        let rowHolder = try database.connect()
        try rowHolder.execute("BEGIN; UPDATE orders SET total = total + 1000 WHERE id = 1")
        let store = try PostgreSQLStore(
            database.connectionString, lockRetries: .init(lockTimeout: .milliseconds(100), retries: 5, backoff: .milliseconds(20)))
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let orders = try coordinator.manager("orders", store: store)
        let attempts = CallCounter()
        orders.register("2.0") { db in
            attempts.hit("2.0")
            try db.execute("UPDATE orders SET total = total * 2")
        }
        let waits = WaitLog()
        coordinator.observer = { event in if case let .waiting(_, wait) = event { waits.append(wait) } }
        let run = BackgroundRun(coordinator)

        // The UPDATE waits for the row, four times the store's lock timeout and more, as the server counts.
        try #require(waitUntil {
            try admin.scalar(
                """
                SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype IN ('transactionid', 'tuple')
                  AND clock_timestamp() - waitstart > interval '400 milliseconds'
                """, as: Int.self) == 1 || run.isDone
        })
        #expect(!run.isDone, "the step waits for the row")
        try rowHolder.execute("COMMIT")
        #expect(try run.result().steps.map(\.outcome) == [.applied])
        #expect(attempts["2.0"] == 1)
        #expect(try admin.rows("SELECT total FROM orders WHERE id IN (1, 2) ORDER BY id").map { try $0[0] as Int } == [2_002, 4])
        #expect(try database.record(of: "orders").history == ["2.0"])
        #expect(waits.all.map(\.holderProcessID) == [rowHolder.serverProcessID], "\(waits.all)")
        #expect(waits.all.first?.lock.contains("a row lock of `UPDATE orders SET total = total * 2`") == true, "\(waits.all)")
    }

    @Test func aStepRegisteredWithoutLockRetriesWaitsForTheSelect() throws {
        let select = try LongSelect(database)
        let store = try PostgreSQLStore(
            database.connectionString, lockRetries: .init(lockTimeout: .milliseconds(100), retries: 0))
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let orders = try coordinator.manager("orders", store: store)
        orders.register("2.0", lockRetries: .off) { db in try db.execute("ALTER TABLE orders ADD COLUMN currency char(3)") }
        let waits = WaitLog()
        coordinator.observer = { event in if case let .waiting(_, wait) = event { waits.append(wait) } }
        let run = BackgroundRun(coordinator)

        // Waiting in the server's lock queue, past the store's 100 ms, with no time-out.
        try #require(waitUntil {
            try admin.scalar(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'ALTER TABLE orders%'",
                as: Int.self) == 1 || run.isDone
        })
        let waited = ContinuousClock.now
        try #require(waitUntil { ContinuousClock.now - waited > .milliseconds(300) || run.isDone })
        #expect(!run.isDone)
        select.cancel(from: admin)
        #expect(try run.result().steps.map(\.outcome) == [.applied])
        #expect(waits.count == 0)
        #expect(try database.columns(of: "orders") == ["id", "total", "currency"])
    }
}

/// A `SELECT` on `orders` that runs until cancelled, on a thread of its own.
private final class LongSelect: Sendable {
    static let sql = "SELECT count(*) FROM orders, pg_sleep(600)"
    let pid: Int32
    private let done = DispatchSemaphore(value: 0)

    init(_ database: PostgreSQLTestDatabase) throws {
        let connection = try database.connect()
        pid = connection.serverProcessID
        nonisolated(unsafe) let owned = connection
        Thread.detachNewThread { [done] in
            _ = try? owned.rows(Self.sql)
            done.signal()
        }
        let admin = try database.connect()
        let pid = pid
        // Holding the table's lock before the migration starts.
        try #require(try waitUntil {
            try admin.scalar(
                "SELECT count(*) FROM pg_locks WHERE pid = $1 AND relation = 'orders'::regclass AND granted",
                arguments: [.integer(Int64(pid))], as: Int.self) == 1
        })
    }

    /// Cancels the query and waits until its thread is done.
    func cancel(from admin: PostgreSQLConnection) {
        _ = try? admin.rows("SELECT pg_cancel_backend($1::int)", arguments: [.integer(Int64(pid))])
        done.wait()
        done.signal()
    }
}

/// The waits a run reported, across threads.
private final class WaitLog: @unchecked Sendable {
    // `lock` guards `waits`.
    private let lock = NSLock()
    private var waits: [StoreWait] = []

    func append(_ wait: StoreWait) { lock.withLock { waits.append(wait) } }
    var all: [StoreWait] { lock.withLock { waits } }
    var count: Int { all.count }
}

/// A coordinator's run on a thread of its own.
private final class BackgroundRun: @unchecked Sendable {
    // `lock` guards `outcome`.
    private let lock = NSLock()
    private var outcome: Result<MigrationReport, any Error>?
    private let finished = DispatchSemaphore(value: 0)

    init(_ coordinator: MigrationCoordinator) {
        Thread.detachNewThread { [self] in
            let result = Result { try coordinator.run() }
            lock.withLock { outcome = result }
            finished.signal()
        }
    }

    var isDone: Bool { lock.withLock { outcome != nil } }

    func result() throws -> MigrationReport {
        try #require(finished.waitForEvent(), "the run ends")
        return try lock.withLock { outcome }!.get()
    }
}
