import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// A resumable row transform (`CrashRunner batched`, the ``BatchedScenario``) killed with SIGKILL
/// at seeded random moments and relaunched until it finishes. After every kill the database's
/// rows and its record agree: exactly the rows up to the recorded cursor were transformed, each
/// once; the dependent migration of the preferences file never ran before the transform was
/// applied. At the end every row was transformed exactly once.
///
/// `STORE_MIGRATIONS_BATCH_KILLS` sets how many kills (200 by default; 1,000 or more for a soak),
/// `STORE_MIGRATIONS_BATCH_SEED` replays a failing seed.
@Suite(.serialized) struct ResumableKillTests {
    static let rows = 2_000
    static let batchRows = 20

    /// What a killed run left: the transformed rows, and the record of the transform.
    struct State {
        /// `(id, value, calls)` of every row.
        var rows: [(id: Int, value: Int, calls: Int)]
        var applied: Bool
        var progress: StepProgress?
        var dependentRan: Bool

        init(directory: URL) throws {
            let scenarioDatabase = directory.appendingPathComponent("batched.sqlite").path
            guard FileManager.default.fileExists(atPath: scenarioDatabase) else {
                rows = []
                applied = false
                progress = nil
                dependentRan = false
                return
            }
            let tables = try RawSQLite.strings("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name", at: scenarioDatabase)
            rows = tables.contains("item")
                ? try RawSQLite.rows("SELECT id, value, calls FROM item ORDER BY id", at: scenarioDatabase).map {
                    (Int($0[0]!)!, Int($0[1]!)!, Int($0[2]!)!)
                }
                : []
            let history = tables.contains("store_migrations_history")
                ? try RawSQLite.strings("SELECT version FROM store_migrations_history WHERE manager = 'items'", at: scenarioDatabase)
                : []
            applied = history.contains("2.0")
            let progressText = tables.contains("store_migrations_levels")
                ? try RawSQLite.strings("SELECT progress FROM store_migrations_levels WHERE manager = 'items'", at: scenarioDatabase)
                    .first ?? nil
                : nil
            progress = try progressText.map { try StoredProgress.list(fromJSON: $0) }?.first { $0.version == "2.0" }
            let preferences = directory.appendingPathComponent("after.json")
            let preferencesText = FileManager.default.fileExists(atPath: preferences.path)
                ? try String(contentsOf: preferences, encoding: .utf8) : ""
            dependentRan = preferencesText.contains("ranAfterItems")
        }

        /// Why the rows and the record disagree, or `nil` when they agree.
        func disagreement() -> String? {
            if dependentRan && !applied { return "the dependent ran before items@2.0 was applied" }
            if rows.isEmpty { return progress == nil && !applied ? nil : "a record without the table" }
            if let bad = rows.first(where: { $0.calls > 1 }) { return "row \(bad.id) was transformed \(bad.calls) times" }
            if let bad = rows.first(where: { $0.value != ($0.calls == 1 ? $0.id * 2 + 1 : $0.id) }) {
                return "row \(bad.id) has value \(bad.value) after \(bad.calls) calls"
            }
            let done = rows.filter { $0.calls == 1 }
            if applied { return done.count == rows.count ? nil : "applied with \(rows.count - done.count) rows untransformed" }
            let expectedThrough = progress.map { Int($0.cursor.dropFirst().dropLast())! } ?? 0
            if done.map(\.id) != Array(0..<expectedThrough).map({ $0 + 1 }) {
                return "rows \(done.first?.id ?? 0)...\(done.last?.id ?? 0) (\(done.count)) transformed, the record says through \(expectedThrough)"
            }
            if let progress, progress.done != done.count { return "the record counts \(progress.done) rows, \(done.count) were transformed" }
            return nil
        }
    }

    @Test(.timeLimit(.minutes(30)))
    func killedAtRandomMomentsEveryRowIsTransformedOnceAndRecordsAgreeWithData() throws {
        let runner = try CrashRunnerExecutable()
        let kills = environmentCount("STORE_MIGRATIONS_BATCH_KILLS", default: 200)
        let seed = environmentSeed("STORE_MIGRATIONS_BATCH_SEED")
        var random = SeededGenerator(seed: seed)
        let folder = try TemporaryFolder()
        let logs = folder.file("logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        let arguments = ["\(Self.rows)", "\(Self.batchRows)"]

        let reference = folder.file("reference")
        var start = ContinuousClock.now
        let uninterrupted = try runner.run(["batched", reference.path] + arguments, logs: logs)
        let fullRun = (ContinuousClock.now - start).seconds
        try #require(uninterrupted.succeeded, "the uninterrupted run failed: \(uninterrupted)")
        let expected = try State(directory: reference)
        #expect(expected.applied && expected.dependentRan && expected.disagreement() == nil)
        start = ContinuousClock.now
        try #require(try runner.run(["batched", reference.path] + arguments, logs: logs).succeeded)
        // A launch that finds nothing to do: process start and planning.
        let upToDate = (ContinuousClock.now - start).seconds
        let work = max(0.01, fullRun - upToDate)

        var killed = 0, trials = 0, launches = 0, resumedMidStep = 0
        while killed < kills {
            trials += 1
            let directory = folder.file("trial-\(trials)")
            var delays: [String] = []
            var completed = false
            var remaining = 1.0
            let killsThisTrial = Int.random(in: 5...20, using: &random)
            while !completed {
                launches += 1
                // Kill moments are drawn over what this launch has left to do, as the last
                // kill's record says, so that one step is killed many times over.
                let delay = delays.count < killsThisTrial
                    ? Double.random(in: 0..<(upToDate + work * remaining * 1.2), using: &random) : 600
                delays.append(String(format: "%.0f ms", delay * 1_000))
                let context = "seed \(seed), trial \(trials), launches ended at \(delays)"
                let child = try runner.start(["batched", directory.path] + arguments, logs: logs)
                if let exit = child.wait(timeout: delay) {
                    try #require(exit.succeeded, "\(context): \(exit)")
                    completed = true
                } else {
                    let exit = child.kill()
                    if exit.signal == nil {
                        try #require(exit.succeeded, "\(context): \(exit)")
                        completed = true
                    } else {
                        killed += 1
                    }
                }
                let state = try State(directory: directory)
                if let problem = state.disagreement() { Issue.record("\(context): \(problem)") }
                if !completed, let progress = state.progress {
                    resumedMidStep += 1
                    remaining = 1 - Double(progress.done) / Double(Self.rows)
                }
            }
            let final = try State(directory: directory)
            #expect(final.applied && final.dependentRan, "seed \(seed), trial \(trials)")
            #expect(final.rows.allSatisfy { $0.calls == 1 }, "seed \(seed), trial \(trials): every row transformed once")
            try FileManager.default.removeItem(at: directory)
        }
        #expect(resumedMidStep > 0, "some kills must land between two batches of the step")
        print("ResumableKillTests: \(killed) kills in \(trials) trials, \(launches) launches, \(resumedMidStep) left the step part-way (seed \(seed))")
    }
}
