import Dispatch
import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// Resumable row transforms on real database files: batches commit their rows with the cursor,
/// failures resume after the last committed batch, batches cannot change the schema, and a
/// deferred transform runs in the background while the app writes to the same table.
@Suite struct ResumableRowTransformTests {
    static let rows = 1_000
    let folder: TemporaryFolder
    let url: URL

    init() throws {
        folder = try TemporaryFolder()
        url = folder.file("library.sqlite")
    }

    /// A coordinator whose `1.0` creates `item(id, value, calls)` with `rows` rows; `2.0` is
    /// what `register` adds.
    func coordinator(_ register: (MigrationManager<SQLiteStore>) -> Void) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let library = try coordinator.manager("library", store: SQLiteStore(url: url))
        library.register("1.0") { db in
            try db.execute("CREATE TABLE item(id INTEGER PRIMARY KEY, value INTEGER NOT NULL, calls INTEGER NOT NULL DEFAULT 0)")
            let insert = try db.prepare("INSERT INTO item(id, value) VALUES (?, ?)")
            for id in 1...Self.rows { try insert.execute(arguments: [.integer(Int64(id)), .integer(Int64(id))]) }
        }
        register(library)
        return coordinator
    }

    /// `(calls, count)` pairs of the table: how many rows were transformed how many times.
    func callCounts() throws -> [String: String] {
        var counts: [String: String] = [:]
        for row in try RawSQLite.rows("SELECT calls, count(*) FROM item GROUP BY calls", at: url.path) { counts[row[0]!] = row[1]! }
        return counts
    }

    static func doubling(failAt: Int64? = nil, failures: Locked<Int> = Locked(0)) -> @Sendable (Row) throws -> KeyValuePairs<String, DatabaseValue>? {
        { row in
            let id: Int64 = try row["id"], value: Int64 = try row["value"], calls: Int64 = try row["calls"]
            if id == failAt, failures.value == 0 {
                failures.value = 1
                throw SimulatedBodyFailure()
            }
            return ["value": .integer(value * 2), "calls": .integer(calls + 1)]
        }
    }

    @Test func everyRowIsTransformedOnceInBatchesAndTheMigrationIsAppliedWithTheLast() throws {
        let events = EventLog()
        let coordinator = try coordinator { library in
            library.registerResumable(
                "2.0", transformingRowsOf: "item", columns: ["id", "value", "calls"], batchSize: .fixed(300), Self.doubling())
        }
        coordinator.observer = { events.append(describe($0)) }
        let report = try coordinator.run()
        #expect(report.steps.map(\.outcome) == [.applied, .applied])
        #expect(try callCounts() == ["1": "\(Self.rows)"])
        #expect(try RawSQLite.strings("SELECT sum(value) FROM item", at: url.path) == ["\(Self.rows * (Self.rows + 1))"])
        #expect(events.all.filter { $0.hasPrefix("batch") } == ["batch library@2.0 300", "batch library@2.0 600", "batch library@2.0 900"])
        #expect(try RawSQLite.strings("SELECT progress FROM store_migrations_levels", at: url.path) == [nil])
    }

    @Test func aFailedBatchRollsBackAloneAndTheNextLaunchResumesAfterTheCommittedOnes() throws {
        let failures = Locked(0)
        func launch() throws -> MigrationReport {
            try runReport(of: try coordinator { library in
                library.registerResumable(
                    "2.0", transformingRowsOf: "item", columns: ["value", "calls"], batchSize: .fixed(250),
                    Self.doubling(failAt: 600, failures: failures))
            })
        }
        let first = try launch()
        #expect(first.failures.map(\.step.id.description) == ["library@2.0"])
        #expect(try callCounts() == ["1": "500", "0": "500"])
        let record = try SQLiteStore(url: url).readRecords()["library"]
        let progress = try #require(record?.progress(of: "2.0"))
        #expect(progress.cursor == "[500]" && progress.done == 500 && progress.total == Self.rows && progress.batches == 2)
        #expect(record?.appliedVersions == ["1.0"])

        let plan = try coordinator { library in
            library.registerResumable("2.0", transformingRowsOf: "item", columns: ["value"]) { _ in nil }
        }.plan()
        #expect(plan.description.contains("in progress 2.0: 50% (500 of 1000) in 2 batches, resumes after [500]"))
        #expect(plan.graphviz().contains(#""library@2.0" [label="library@2.0\n50% done"];"#))

        #expect(try launch().steps.map(\.outcome) == [.applied])
        #expect(try callCounts() == ["1": "\(Self.rows)"], "every row transformed exactly once")
    }

    @Test func aBatchThatChangesTheSchemaIsRefusedNamingTheStepByItsName() throws {
        let coordinator = try coordinator { library in
            library.registerResumable("2.0", options: .named("count calls")) { db, batch in
                try db.execute("UPDATE item SET calls = calls + 1 WHERE id = 1")
                try db.execute("ALTER TABLE item ADD COLUMN note TEXT")
                return .finished(processed: 1)
            }
        }
        let report = try runReport(of: coordinator)
        let failure = try #require(report.failures.first?.error as? SQLiteStoreError)
        #expect(failure.reason == .schemaChangeInBatch(statement: "ALTER TABLE item ADD COLUMN note TEXT"))
        #expect(failure.migration == MigrationReference(manager: "library", version: "2.0"))
        #expect(failure.migration?.name == "count calls")
        #expect(failure.description == "Migration library@2.0 (count calls) on SQLite database \(url.path) ran `ALTER TABLE item ADD "
            + "COLUMN note TEXT` in a batch; batches of a resumable migration cannot change the schema, and the batch was "
            + "rolled back. Make the change in an ordinary migration registered before it.")
        #expect(try callCounts() == ["0": "\(Self.rows)"], "the batch's update was rolled back with it")
        #expect(try RawSQLite.strings("SELECT name FROM pragma_table_info('item')", at: url.path) == ["id", "value", "calls"])
        // An ordinary migration may change the schema: the guard is the batch's alone.
        let later = MigrationCoordinator(appVersion: "2.0")
        try later.manager("library", store: SQLiteStore(url: url)).register("1.0") { db in
            try db.execute("ALTER TABLE item ADD COLUMN note TEXT")
        }
        _ = try later.run()
    }

    /// A deferred check reads every table after the step: after every batch it would cost a large
    /// table's batches more than their work. Batches are checked as their statements run.
    @Test func aBatchIsCheckedForForeignKeysAsItsStatementsRun() throws {
        let coordinator = try coordinator { library in
            library.register("1.1") { db in
                try db.execute("CREATE TABLE tag(id INTEGER PRIMARY KEY, item_id INTEGER NOT NULL REFERENCES item(id))")
            }
            library.registerResumable("2.0") { db, _ in
                try db.execute("UPDATE item SET calls = calls + 1 WHERE id = 1")
                try db.execute("INSERT INTO tag(item_id) VALUES (\(Self.rows + 1))")
                return .finished(processed: 1)
            }
        }
        let report = try runReport(of: coordinator)
        let failure = try #require(report.failures.first?.error as? SQLiteError)
        #expect(failure.isForeignKeyViolation && failure.sql == "INSERT INTO tag(item_id) VALUES (\(Self.rows + 1))")
        #expect(try callCounts() == ["0": "\(Self.rows)"])
    }

    @Test func aBatchThatEndsItsTransactionIsRefusedAndRecordsNothing() throws {
        let coordinator = try coordinator { library in
            library.registerResumable("2.0") { db, _ in
                try db.execute("UPDATE item SET calls = calls + 1")
                try db.execute("COMMIT")
                return .finished(processed: 1)
            }
        }
        let report = try runReport(of: coordinator)
        #expect(report.failures.map(\.step.id.description) == ["library@2.0"])
        #expect(try callCounts() == ["0": "\(Self.rows)"])
        #expect(try SQLiteStore(url: url).readRecords()["library"]?.appliedVersions == ["1.0"])
    }

    @Test func aDeferredTransformRunsInTheBackgroundWhileTheAppWritesToTheSameTable() throws {
        let coordinator = try coordinator { library in
            library.registerResumable(
                "2.0", transformingRowsOf: "item", columns: ["value", "calls"], batchSize: .fixed(50), deferred: true,
                Self.doubling())
        }
        coordinator.deferredWork = .manual
        let launch = try coordinator.run()
        #expect(launch.steps.map(\.outcome) == [.applied, .deferred])
        #expect(try callCounts() == ["0": "\(Self.rows)"])

        // The app inserts a row between each of the first ten batches of the background run, on a
        // connection of its own (the observer hears of a batch once it has committed): rows with
        // higher keys, which the transform reaches later.
        let app = SQLiteStore(url: url)
        let added = Locked(0)
        coordinator.observer = { event in
            guard case .batchCommitted = event, added.value < 10 else { return }
            added.value += 1
            let id = Int64(Self.rows + added.value)
            do {
                try app.write { db in try db.execute("INSERT INTO item(id, value) VALUES (?, ?)", arguments: [.integer(id), .integer(id)]) }
            } catch {
                Issue.record("the app's insert failed: \(error)")
            }
        }
        let handle = coordinator.runDeferred(queue: DispatchQueue(label: "test"))
        #expect(try handle.wait().steps.map(\.outcome) == [.applied])
        #expect(try callCounts() == ["1": "\(Self.rows + 10)"], "every row, the app's included, transformed once")
    }
}
