import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsPostgreSQL
import TestSupport

/// What a migration body does with its `PostgreSQLConnection`: typed rows, prepared statements,
/// batched transforms with progress, cursors, COPY, and typed errors.
@Suite struct PostgreSQLConnectionTests {
    /// Runs `body` as the only step of a coordinator run on a fresh database.
    private func step(
        _ database: PostgreSQLTestDatabase, progress: FractionLog? = nil,
        _ body: @escaping @Sendable (PostgreSQLConnection, MigrationContext) throws -> Void
    ) throws {
        let coordinator = MigrationCoordinator(appVersion: "1")
        coordinator.observer = { event in
            if case .progress(_, let fraction) = event { progress?.append(fraction) }
        }
        try coordinator.manager("service", store: database.store()).register("1") { db, context in try body(db, context) }
        _ = try coordinator.run()
    }

    @Test func parametersAndTypedRowsRoundTrip() throws {
        let database = try PostgreSQLTestDatabase()
        try step(database) { db, _ in
            try db.execute("CREATE TABLE v(i int, b bigint, f float8, t text, flag bool, data bytea, n numeric, note text)")
            let inserted = try db.execute(
                "INSERT INTO v VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                arguments: [42, .integer(Int64.max), 2.5, "tab\there 'quoted' é", true, .bytes([0, 1, 254, 255]), .text("12.50"), nil])
            #expect(inserted == 1)
            let row = try #require(try db.rows("SELECT * FROM v").first)
            #expect(row.columnNames == ["i", "b", "f", "t", "flag", "data", "n", "note"])
            #expect(try row["i"] as Int == 42)
            #expect(try row["b"] as Int64 == Int64.max)
            #expect(try row["f"] as Double == 2.5)
            #expect(try row["t"] as String == "tab\there 'quoted' é")
            #expect(try row["flag"] as Bool == true)
            #expect(try row["data"] as [UInt8] == [0, 1, 254, 255])
            #expect(try row["n"] as Double == 12.5)
            #expect(try row["note"] as String? == nil)
            #expect(try db.rows("SELECT (-7)::int2, 4294967296::int8, 'NaN'::float8, 1e300::float8").first?.values
                .dropLast(2) == [.integer(-7), .integer(4_294_967_296)])
            #expect(try db.scalar("SELECT 1e300::float8", as: Double.self) == 1e300)
            let error = try #require(throws: PostgreSQLError.self) { try row["note"] as String }
            #expect(error.kind == .valueConversion)
            #expect(error.message == "column note is NULL; read it as String?")
        }
    }

    @Test func preparedStatementsTransformsCursorsAndCopy() throws {
        let database = try PostgreSQLTestDatabase()
        let progress = FractionLog()
        try step(database, progress: progress) { db, _ in
            try db.execute("CREATE TABLE event(id bigint PRIMARY KEY, title text, guid text)")
            let loaded = try db.copy(into: "event", columns: ["id", "title"]) { writer in
                for id in 1...2_500 { try writer.append([.integer(Int64(id)), id == 7 ? .text("line\nbreak\\slash\ttab") : .text("t\(id)")]) }
                try writer.append([.integer(2_501), .null])
            }
            #expect(loaded == 2_501)
            #expect(try db.scalar("SELECT title FROM event WHERE id = 7", as: String.self) == "line\nbreak\\slash\ttab")
            #expect(try db.scalar("SELECT count(*) FROM event WHERE title IS NULL", as: Int.self) == 1)

            let insert = try db.prepare("INSERT INTO event(id, title) VALUES ($1, $2)")
            for id in 3_000..<3_100 { try insert.execute(arguments: [.integer(Int64(id)), .text("p\(id)")]) }
            #expect(try db.scalar("SELECT count(*) FROM event", as: Int.self) == 2_601)

            let written = try db.transformRows(in: "event", columns: ["title", "guid"], where: "title IS NOT NULL", batchSize: 500) { row in
                let title: String = try row["title"]
                return title.hasPrefix("p") ? nil : ["guid": .text("g-\(title.count)")]
            }
            #expect(written == 2_500)
            #expect(try db.scalar("SELECT count(*) FROM event WHERE guid IS NOT NULL", as: Int.self) == 2_500)

            var sum = 0, rows = 0
            try db.forEachRow("SELECT id FROM event WHERE id >= $1", [3_000], batchSize: 7) { row in
                sum += try row[0] as Int
                rows += 1
            }
            #expect(rows == 100 && sum == (3_000..<3_100).reduce(0, +))

            // A refused COPY fails the transaction; a savepoint lets the body go on.
            try db.execute("SAVEPOINT before_copy")
            let refusal = try #require(throws: PostgreSQLError.self) {
                try db.copy(into: "event", columns: ["id"]) { writer in try writer.append([1]) }
            }
            #expect(refusal.sqlState == "23505")
            #expect(refusal.sql == "COPY \"event\" (\"id\") FROM STDIN")
            try db.execute("ROLLBACK TO SAVEPOINT before_copy")
        }
        #expect(progress.values.last == 1)
        #expect(progress.values.count >= 5)
    }

    @Test func aCancelledRunStopsATransformAndRollsItBack() async throws {
        let database = try PostgreSQLTestDatabase()
        try database.connect().execute("CREATE TABLE big(id bigint PRIMARY KEY, v int); INSERT INTO big SELECT i, 0 FROM generate_series(1, 5000) i")
        let coordinator = MigrationCoordinator(appVersion: "1")
        // The first row waits for the test to cancel, so that the cancellation lands mid-transform
        // however slow the machine (a sanitizer build, a loaded CI box).
        let firstRow = DispatchSemaphore(value: 0), cancelled = DispatchSemaphore(value: 0)
        let started = FractionLog()
        try coordinator.manager("service", store: database.store()).register("1") { db in
            try db.transformRows(in: "big", columns: ["v"], batchSize: 100) { _ in
                if started.values.isEmpty {
                    started.append(1)
                    firstRow.signal()
                    _ = cancelled.waitForEvent()
                }
                return ["v": 1]
            }
        }
        let task = Task { try await coordinator.run() }
        // Cancelled from a Dispatch thread, not from this task: the transform blocks a thread of
        // the concurrency pool, and on a small machine the other ones may all be running other
        // tests for longer than the transform waits.
        DispatchQueue.global().async {
            firstRow.wait()
            task.cancel()
            cancelled.signal()
        }
        let result = await task.result
        #expect(throws: (any Error).self) { try result.get() }
        #expect(try database.connect().scalar("SELECT count(*) FROM big WHERE v = 1", as: Int.self) == 0)
        // The record tables, created in the step's transaction, went with it.
        #expect(try database.tables() == ["big"])
    }
}

/// Values appended from any thread.
final class FractionLog: @unchecked Sendable {
    // `lock` guards `stored`.
    private let lock = NSLock()
    private var stored: [Double] = []

    func append(_ value: Double) { lock.withLock { stored.append(value) } }
    var values: [Double] { lock.withLock { stored } }
}
