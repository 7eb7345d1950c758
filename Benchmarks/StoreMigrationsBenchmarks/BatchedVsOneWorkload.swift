import Foundation
import StoreMigrations
import StoreMigrationsSQLite

/// The row-transform workload's GUID stamp over the same rows, two ways through the library: a
/// resumable step committing batch by batch (`registerResumable(transformingRowsOf:)`, batch
/// size `.automatic`), against `transformRows` in an ordinary step, one transaction. What the
/// ratio shows is the price of resumability: a commit, the cursor and progress written, and the
/// batch's statements compiled again, per batch. Peak memory too: a batch holds at most
/// `batch.limit` rows, the single transaction 1,000 at a time.
struct BatchedVsOneWorkload {
    let rows: Int
    let timer: Timer

    func run() throws -> [Measurement] {
        let fixture = try SQLiteFixture(
            name: "batched-vs-one", rows: rows,
            schema: "CREATE TABLE event(id INTEGER PRIMARY KEY, name TEXT NOT NULL, guid TEXT)",
            insert: "INSERT INTO event(name) VALUES (?)", values: { ["event \($0)"] })
        defer { fixture.remove() }
        var work = fixture.template
        let counter = BatchCounter()

        func batched() throws {
            let coordinator = MigrationCoordinator(appVersion: "2.0")
            coordinator.observer = { event in
                if case .batchCommitted = event { counter.add() }
            }
            try coordinator.manager("library", store: SQLiteStore(url: work))
                .registerResumable("2.0", transformingRowsOf: "event", columns: ["id", "guid"], batchSize: .automatic) { row in
                    ["guid": .text(computedGUID(try row["id"]))]
                }
            counter.startRun()
            try coordinator.run()
        }
        func oneTransaction() throws {
            let coordinator = MigrationCoordinator(appVersion: "2.0")
            try coordinator.manager("library", store: SQLiteStore(url: work)).register("2.0") { db in
                try db.transformRows(in: "event", columns: ["id", "guid"]) { row in
                    ["guid": .text(computedGUID(try row["id"]))]
                }
            }
            try coordinator.run()
        }

        let (batchedRuns, oneRuns) = try timer.compare(
            measuringMemory: true,
            prepareLibrary: { work = try fixture.copy("batched.sqlite") }, library: batched,
            prepareBaseline: {
                try verify(work)
                work = try fixture.copy("one.sqlite")
            },
            baseline: oneTransaction)
        try verify(work)
        try verify(fixture.directory.appendingPathComponent("batched.sqlite"))

        // The batches' commits plus the last batch, which is recorded applied.
        let batches = counter.perRun.map { String($0 + 1) }.joined(separator: ", ")
        return [Measurement(
            workload: "batched vs one transaction (\(rows) rows)",
            metric: "resumable step, .automatic batches, vs transformRows in one transaction",
            runs: timer.runs, libraryMedian: batchedRuns.median, baselineMedian: oneRuns.median,
            target: "≤ 1.05×; peak ≤ baseline + 32 MiB",
            libraryPeakMiB: batchedRuns.peakMiB, baselinePeakMiB: oneRuns.peakMiB,
            note: "batches per run (warm-up first): \(batches)")]
    }

    private func verify(_ url: URL) throws {
        let db = try RawSQLite(path: url.path)
        let missing = try db.integers("SELECT count(*) FROM event WHERE guid IS NULL")
        precondition(missing == [0], "\(url.lastPathComponent): \(missing[0]) rows were left without a GUID")
        let level = try db.scalarText("SELECT level FROM store_migrations_levels WHERE manager = 'library'")
        precondition(level == "2.0", "\(url.lastPathComponent): the step is not recorded applied (level \(level ?? "none"))")
    }
}

/// Counts `.batchCommitted` events per run; the observer is called on the scheduler's threads.
final class BatchCounter: @unchecked Sendable {
    // @unchecked: `counts` is only touched with `lock` held.
    private let lock = NSLock()
    private var counts: [Int] = []

    func startRun() { lock.withLock { counts.append(0) } }
    func add() { lock.withLock { counts[counts.count - 1] += 1 } }
    var perRun: [Int] { lock.withLock { counts } }
}
