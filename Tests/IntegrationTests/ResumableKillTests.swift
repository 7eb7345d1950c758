import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// Resumable migrations killed with SIGKILL at seeded random moments and relaunched until they
/// finish: a row transform (`CrashRunner batched`, the ``BatchedScenario``) and a schema migration
/// with an entity mapping (`CrashRunner mapped`, the ``MappedScenario``). After every kill the
/// database's rows and its record agree: exactly the rows up to the recorded cursor were
/// transformed or mapped, each once; the dependent migration of the preferences file never ran
/// before the migration was applied. At the end every row was processed exactly once.
///
/// `STORE_MIGRATIONS_BATCH_KILLS` sets how many kills for the row transform (200 by default;
/// 1,000 or more for a soak; the mapped migration gets half as many), `STORE_MIGRATIONS_BATCH_SEED`
/// replays a failing seed.
@Suite(.serialized) struct ResumableKillTests {
    static let rows = 2_000
    static let batchRows = 20

    /// What a killed run of a scenario left, read from its files.
    protocol KilledRunState {
        init(directory: URL) throws
        /// Why the data and the record disagree, or `nil` when they agree.
        func disagreement() -> String?
        var applied: Bool { get }
        var dependentRan: Bool { get }
        /// How many rows the record says are done, while the migration is in progress.
        var recordedDone: Int? { get }
        /// Whether every row was processed exactly once (checked at the end).
        var everyRowOnce: Bool { get }
    }

    /// What a killed run left: the transformed rows, and the record of the transform.
    struct State: KilledRunState {
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

        var recordedDone: Int? { progress?.done }
        var everyRowOnce: Bool { rows.allSatisfy { $0.calls == 1 } }
    }

    /// What a killed run of the mapped migration left: the old or new tables, and the record.
    struct MappedState: KilledRunState {
        var oldRows: [(id: Int, value: Int)] = []
        /// `(id, value, group name)` of the new table's rows.
        var newRows: [(id: Int, value: Int, group: String)] = []
        var groups: [String] = []
        var sourceRows = 0
        var tables: [String] = []
        var applied = false
        var progress: StepProgress?
        var dependentRan = false

        init(directory: URL) throws {
            let database = directory.appendingPathComponent("mapped.sqlite").path
            guard FileManager.default.fileExists(atPath: database) else { return }
            tables = try RawSQLite.strings("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name", at: database)
                .compactMap { $0 }
            let columns = try RawSQLite.strings("SELECT name FROM pragma_table_info('item')", at: database)
            if columns.contains("grp") {
                oldRows = try RawSQLite.rows("SELECT id, value FROM item ORDER BY id", at: database).map { (Int($0[0]!)!, Int($0[1]!)!) }
            } else if columns.contains("group_id") {
                newRows = try RawSQLite.rows(
                    "SELECT item.id, value, grp.name FROM item JOIN grp ON grp.id = group_id ORDER BY item.id", at: database
                ).map { (Int($0[0]!)!, Int($0[1]!)!, $0[2]!) }
                groups = try RawSQLite.strings("SELECT name FROM grp ORDER BY id", at: database).compactMap { $0 }
            }
            if tables.contains("store_migrations_source_item") {
                sourceRows = Int(try RawSQLite.strings("SELECT count(*) FROM store_migrations_source_item", at: database)[0]!)!
            }
            if tables.contains("store_migrations_history") {
                applied = try RawSQLite.strings("SELECT version FROM store_migrations_history WHERE manager = 'items'", at: database)
                    .contains("2.0")
            }
            let progressText = tables.contains("store_migrations_levels")
                ? try RawSQLite.strings("SELECT progress FROM store_migrations_levels WHERE manager = 'items'", at: database)
                    .first ?? nil
                : nil
            progress = try progressText.map { try StoredProgress.list(fromJSON: $0) }?.first { $0.version == "2.0" }
            let preferences = directory.appendingPathComponent("after.json")
            if FileManager.default.fileExists(atPath: preferences.path) {
                dependentRan = try String(contentsOf: preferences, encoding: .utf8).contains("ranAfterItems")
            }
        }

        func disagreement() -> String? {
            if dependentRan && !applied { return "the dependent ran before items@2.0 was applied" }
            if let bad = newRows.first(where: { $0.value != $0.id * 2 + 1 || $0.group != "group \($0.id % 7)" }) {
                return "item \(bad.id) was mapped to value \(bad.value) in \(bad.group)"
            }
            let mappedGroups = Set(newRows.map(\.group))
            if groups.count != Set(groups).count || Set(groups) != mappedGroups {
                return "groups \(groups) for items in \(mappedGroups.sorted())"
            }
            if applied {
                if tables.contains(where: { $0.hasPrefix("store_migrations_source") || $0.hasPrefix("store_migrations_mapping") }) {
                    return "applied, with \(tables) left"
                }
                return newRows.map(\.id) == Array(1...ResumableKillTests.rows) ? nil : "applied with \(newRows.count) items"
            }
            guard let progress else {
                if !newRows.isEmpty || sourceRows > 0 { return "the new schema without a record of the migration" }
                return oldRows.isEmpty || oldRows.allSatisfy({ $0.value == $0.id }) ? nil : "the old table was changed"
            }
            guard let cursor = try? JSONDecoder().decode(MappedMigrationCursor.self, from: Data(progress.cursor.utf8)),
                  let after = cursor.after.flatMap({ Int($0.dropFirst().dropLast()) })
            else { return "unreadable cursor \(progress.cursor)" }
            if newRows.map(\.id) != Array(0..<after).map({ $0 + 1 }) {
                return "items \(newRows.first?.id ?? 0)...\(newRows.last?.id ?? 0) (\(newRows.count)) mapped, the record says through \(after)"
            }
            if progress.done != newRows.count { return "the record counts \(progress.done) items, \(newRows.count) were mapped" }
            if sourceRows != ResumableKillTests.rows { return "the set-aside table holds \(sourceRows) rows" }
            return nil
        }

        var recordedDone: Int? { progress?.done }
        var everyRowOnce: Bool { newRows.count == ResumableKillTests.rows && Set(newRows.map(\.id)).count == newRows.count }
    }

    @Test(.timeLimit(.minutes(30)))
    func killedAtRandomMomentsEveryRowIsTransformedOnceAndRecordsAgreeWithData() throws {
        try killRepeatedly("batched", State.self, kills: environmentCount("STORE_MIGRATIONS_BATCH_KILLS", default: 200))
    }

    @Test(.timeLimit(.minutes(30)))
    func aMappedSchemaMigrationKilledAtRandomMomentsMapsEveryRowOnceAndRecordsAgreeWithData() throws {
        try killRepeatedly("mapped", MappedState.self, kills: environmentCount("STORE_MIGRATIONS_BATCH_KILLS", default: 200) / 2)
    }

    /// Runs `mode` uninterrupted once, then kills it at random moments, `kills` times in all,
    /// checking what every kill left, and every trial's end.
    private func killRepeatedly<S: KilledRunState>(_ mode: String, _ state: S.Type, kills: Int) throws {
        let runner = try CrashRunnerExecutable()
        let seed = environmentSeed("STORE_MIGRATIONS_BATCH_SEED")
        var random = SeededGenerator(seed: seed)
        let folder = try TemporaryFolder()
        let logs = folder.file("logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        let arguments = ["\(Self.rows)", "\(Self.batchRows)"]

        let reference = folder.file("reference")
        var start = ContinuousClock.now
        let uninterrupted = try runner.run([mode, reference.path] + arguments, logs: logs)
        let fullRun = (ContinuousClock.now - start).seconds
        try #require(uninterrupted.succeeded, "the uninterrupted run failed: \(uninterrupted)")
        let expected = try S(directory: reference)
        #expect(expected.applied && expected.dependentRan && expected.disagreement() == nil)
        start = ContinuousClock.now
        try #require(try runner.run([mode, reference.path] + arguments, logs: logs).succeeded)
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
                let child = try runner.start([mode, directory.path] + arguments, logs: logs)
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
                let state = try S(directory: directory)
                if let problem = state.disagreement() { Issue.record("\(context): \(problem)") }
                if !completed, let done = state.recordedDone {
                    resumedMidStep += 1
                    remaining = 1 - Double(done) / Double(Self.rows)
                }
            }
            let final = try S(directory: directory)
            #expect(final.applied && final.dependentRan, "seed \(seed), trial \(trials)")
            #expect(final.everyRowOnce, "seed \(seed), trial \(trials): every row processed once")
            try FileManager.default.removeItem(at: directory)
        }
        #expect(resumedMidStep > 0, "some kills must land between two batches of the step")
        print("ResumableKillTests (\(mode)): \(killed) kills in \(trials) trials, \(launches) launches, \(resumedMidStep) left the step part-way (seed \(seed))")
    }
}
