import Foundation
import StoreMigrations
import StoreMigrationsSQLite

/// The 1,000,000-row transform as a resumable step in a child process that is SIGKILLed every
/// `killEvery` seconds and started again until the step is done, as the system kills an app
/// whose launch takes too long: the total time against one uninterrupted run of the same step,
/// in a child process too (so both sides pay for starting processes). For contrast, the old
/// single-transaction `transformRows` step killed on the same schedule: each kill rolls all of
/// its work back, so it never finishes when one attempt takes longer than the interval; it is
/// given a bounded number of attempts.
///
/// The transform counts its calls per row (`calls = calls + 1`), and every run is checked
/// afterwards: each row transformed exactly once, the step recorded applied.
struct ResumableKillWorkload {
    let rows: Int
    let killEvery: Double
    /// How many killed attempts the single-transaction step gets before it is reported as
    /// never finishing.
    let singleAttempts: Int
    let timer: Timer

    /// The hidden subcommand a child runs: `benchmarks child-transform resumable|single PATH`.
    static let childCommand = "child-transform"

    func run() throws -> [Measurement] {
        let fixture = try SQLiteFixture(
            name: "resumable-kill", rows: rows,
            schema: "CREATE TABLE event(id INTEGER PRIMARY KEY, name TEXT NOT NULL, guid TEXT, calls INTEGER NOT NULL DEFAULT 0)",
            insert: "INSERT INTO event(name) VALUES (?)", values: { ["event \($0)"] })
        defer { fixture.remove() }
        var work = fixture.template
        var attempts: [Int] = []
        var widenedTo: Double?

        // On a machine too busy for a child to start and commit a batch within the interval, no
        // attempt moves the step and the loop would never end (a CI run hung on it at 0.1 s):
        // after a few attempts in a row that moved nothing, the interval doubles, and the
        // measurement says so.
        func killedUntilDone() throws {
            var attempt = 0, stalled = 0
            var interval = killEvery
            var progress: String?
            while true {
                attempt += 1
                let ending = try ChildProcess.run([Self.childCommand, "resumable", work.path], killAfter: interval)
                if ending == .exited(0) { break }
                guard ending == .killed else { throw RawSQLiteError(message: "the resumable child ended with \(ending)") }
                let now = try? RawSQLite(path: work.path).scalarText(
                    "SELECT progress FROM store_migrations_levels WHERE manager = 'library'")
                stalled = now == progress ? stalled + 1 : 0
                progress = now
                if stalled == Self.stalledAttemptsBeforeWidening {
                    stalled = 0
                    interval *= 2
                    widenedTo = max(widenedTo ?? 0, interval)
                }
            }
            attempts.append(attempt)
        }
        func uninterrupted() throws {
            let ending = try ChildProcess.run([Self.childCommand, "resumable", work.path])
            guard ending == .exited(0) else { throw RawSQLiteError(message: "the resumable child ended with \(ending)") }
        }

        let (killedRuns, uninterruptedRuns) = try timer.compare(
            prepareLibrary: { work = try fixture.copy("killed.sqlite") }, library: killedUntilDone,
            prepareBaseline: {
                try verify(work)
                work = try fixture.copy("uninterrupted.sqlite")
            },
            baseline: uninterrupted)
        try verify(work)

        // The contrast: the old step, one transaction, on the same schedule.
        work = try fixture.copy("single.sqlite")
        var singleTried = 0, singleFinished = false
        let singleStart = ContinuousClock.now
        while singleTried < singleAttempts, !singleFinished {
            singleTried += 1
            let ending = try ChildProcess.run([Self.childCommand, "single", work.path], killAfter: killEvery)
            guard ending == .exited(0) || ending == .killed else { throw RawSQLiteError(message: "the single child ended with \(ending)") }
            singleFinished = ending == .exited(0)
        }
        let singleSeconds = (ContinuousClock.now - singleStart).inSeconds
        if singleFinished {
            try verify(work)
        } else {
            // Every kill rolled the whole transaction back: not one row done, nothing recorded.
            let untouched = try RawSQLite(path: work.path).integers("SELECT count(*) FROM event WHERE calls = 0 AND guid IS NULL")
            precondition(untouched == [Int64(rows)], "killed single-transaction attempts left rows changed: \(untouched)")
        }
        // How long one attempt of it needs, uninterrupted: why it does or does not finish.
        work = try fixture.copy("single-uninterrupted.sqlite")
        let singleOnce = ContinuousClock.now
        let ending = try ChildProcess.run([Self.childCommand, "single", work.path])
        let singleOnceSeconds = (ContinuousClock.now - singleOnce).inSeconds
        guard ending == .exited(0) else { throw RawSQLiteError(message: "the single child ended with \(ending)") }
        try verify(work)

        let workload = "resumable kill (\(rows) rows, SIGKILL every \(formatSeconds(killEvery)))"
        let attemptsText = attempts.dropFirst().map(String.init).joined(separator: ", ")
        return [
            Measurement(
                workload: workload, metric: "resumable step killed until done vs one uninterrupted run (child processes)",
                runs: timer.runs, libraryMedian: killedRuns.median, baselineMedian: uninterruptedRuns.median,
                target: killEvery < 1 ? "≤ 1.3×" : "≤ 1.1×",
                note: "attempts per timed run: \(attemptsText.isEmpty ? String(attempts.first ?? 0) : attemptsText)"
                    + (widenedTo.map { "; no batch committed within the interval, widened to \(formatSeconds($0))" } ?? "")),
            Measurement(
                workload: workload, metric: "old single-transaction transformRows step, killed on the same schedule",
                runs: 1, libraryMedian: singleSeconds, baselineMedian: nil, target: "(contrast)",
                note: singleFinished
                    ? "finished at attempt \(singleTried); one uninterrupted attempt: \(formatSeconds(singleOnceSeconds))"
                    : "never finished: \(singleTried) attempts killed, no row kept; one uninterrupted attempt takes \(formatSeconds(singleOnceSeconds))"),
        ]
    }

    /// Every row transformed exactly once, and the step recorded applied.
    private func verify(_ url: URL) throws {
        let db = try RawSQLite(path: url.path)
        let wrong = try db.integers("SELECT count(*) FROM event WHERE calls != 1 OR guid IS NULL")
        precondition(wrong == [0], "\(url.lastPathComponent): \(wrong[0]) rows not transformed exactly once")
        let level = try db.scalarText("SELECT level FROM store_migrations_levels WHERE manager = 'library'")
        precondition(level == "2.0", "\(url.lastPathComponent): the step is not recorded applied (level \(level ?? "none"))")
    }

    /// Killed attempts in a row that commit no batch before the interval between kills doubles.
    static let stalledAttemptsBeforeWidening = 5

    /// The child's side: runs the step on the database at `path`, resumable or in one transaction.
    /// Returns the process's exit status.
    static func runChild(_ arguments: [String]) -> Int32 {
        guard arguments.count == 2, ["resumable", "single"].contains(arguments[0]) else {
            FileHandle.standardError.write(Data("usage: benchmarks \(childCommand) resumable|single PATH\n".utf8))
            return 2
        }
        let trace = ProcessInfo.processInfo.environment[traceVariable] != nil
        if trace { traceLine("main") }
        do {
            let coordinator = MigrationCoordinator(appVersion: "2.0")
            let manager = try coordinator.manager("library", store: SQLiteStore(url: URL(fileURLWithPath: arguments[1])))
            if trace {
                traceLine("opened")
                coordinator.observer = { event in
                    switch event {
                    case .planned: traceLine("planned")
                    case .started: traceLine("started")
                    case let .batchCommitted(_, progress):
                        traceLine("committed done=\(progress.done) next=\(progress.batchSize ?? 0)")
                    case .finished: traceLine("finished")
                    default: break
                    }
                }
            }
            if arguments[0] == "resumable" {
                manager.registerResumable("2.0", transformingRowsOf: "event", columns: ["id", "guid", "calls"], countedGUID)
            } else {
                manager.register("2.0") { db in
                    try db.transformRows(in: "event", columns: ["id", "guid", "calls"], countedGUID)
                }
            }
            try coordinator.run()
            return 0
        } catch {
            FileHandle.standardError.write(Data("\(childCommand) \(arguments[0]): \(error)\n".utf8))
            return 1
        }
    }
}

/// When set, a child writes a line to standard error at each point of its launch and after
/// each committed batch, stamped with the monotonic clock, so that a driver that notes when it
/// spawned and killed the child can tell where an attempt's time went.
private let traceVariable = "BENCHMARKS_TRACE_CHILD"

private func traceLine(_ text: String) {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    let seconds = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    FileHandle.standardError.write(Data("\(String(format: "%.6f", seconds)) \(text)\n".utf8))
}

/// The GUID stamp of the row-transform workload, with a count of the calls for each row.
@Sendable private func countedGUID(_ row: Row) throws -> KeyValuePairs<String, DatabaseValue>? {
    let calls: Int64 = try row["calls"]
    return ["guid": .text(computedGUID(try row["id"])), "calls": .integer(calls + 1)]
}
