import Foundation
import Testing
@testable import CrashRunner
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// What the scenario's stores hold, read back from disk the way a later launch would, plus what
/// the checks need beyond equality with an uninterrupted run.
struct ScenarioSnapshot {
    /// The data of every store, one canonical line per value, row or file.
    var lines: [String] = []
    /// How often each preferences migration ran, from `counters`.
    var preferenceCounts: [String: Int] = [:]
    /// How often each database migration ran, from `apply_counts`.
    var databaseCounts: [String: Int] = [:]
    /// `manager@version` of every row of the database's history table, in order.
    var history: [String] = []
    /// How often each cache migration's body started, from `runs.log`.
    var cacheRuns: [String: Int] = [:]
    /// Files that should not be there: temporary files of a killed writer.
    var leftovers: [String] = []

    init(directory: URL) throws {
        let scenario = Scenario(directory: directory)
        let everything = try FileManager.default.subpathsOfDirectory(atPath: directory.path).sorted()
        leftovers = everything.filter { path in
            let name = (path as NSString).lastPathComponent
            return name.hasPrefix(".") && name.hasSuffix(".tmp")
        }

        // Preferences: parsed once by Foundation, independently of the store's own decoder.
        let preferencesData = try Data(contentsOf: scenario.preferencesURL)
        guard (try? JSONSerialization.jsonObject(with: preferencesData)) is [String: Any] else {
            throw ProcessTestFailure("\(scenario.preferencesURL.path) is not a JSON object")
        }
        let preferencesStore = PreferencesStore(url: scenario.preferencesURL)
        let preferences = try preferencesStore.read()
        lines.append("prefs levels \(Self.describe(try preferencesStore.states()))")
        lines += String(decoding: try PreferencesJSON.encode(preferences.values), as: UTF8.self)
            .split(separator: "\n").map { "prefs \($0)" }
        for (key, value) in preferences.dictionary("counters") ?? [:] {
            if case .int(let count) = value { preferenceCounts[key] = count }
        }

        // Database: checked for integrity, then every table row by row.
        let databaseStore = SQLiteStore(url: scenario.databaseURL, busyTimeout: 10)
        lines.append("library levels \(Self.describe(try databaseStore.states()))")
        try databaseStore.read { db in
            let integrity = try db.rows("PRAGMA integrity_check").map { try $0[0] as String }
            guard integrity == ["ok"] else {
                throw ProcessTestFailure("\(scenario.databaseURL.path) fails its integrity check: \(integrity)")
            }
            for row in try db.rows("SELECT type, name, sql FROM sqlite_master ORDER BY type, name") {
                lines.append("library schema \(row.values)")
            }
            let tables = try db.rows("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
                .map { try $0["name"] as String }
            for table in tables where table != SQLiteStore.historyTable {
                for row in try db.rows("SELECT * FROM \(Database.quoted(table)) ORDER BY rowid") {
                    lines.append("library \(table) \(row.values)")
                }
            }
            history = try db.rows("SELECT manager, version FROM \(SQLiteStore.historyTable) ORDER BY id")
                .map { "\(try $0["manager"] as String)@\(try $0["version"] as String)" }
            lines += history.map { "library history \($0)" }
            for row in try db.rows("SELECT version, count FROM apply_counts") {
                databaseCounts[try row["version"]] = Int(try row["count"] as Int64)
            }
        }

        // Cache: the marker must parse; every other file is compared by contents.
        let cacheStore = CacheStore(directory: scenario.cacheURL)
        lines.append("thumbnails levels \(Self.describe(try cacheStore.states()))")
        let cachePrefix = Scenario.cacheName + "/"
        for path in everything where path.hasPrefix(cachePrefix) {
            let relative = String(path.dropFirst(cachePrefix.count))
            let url = directory.appendingPathComponent(path)
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder), !isFolder.boolValue,
                  relative != CacheStore.lockName
            else { continue }
            let contents = try Data(contentsOf: url)
            if relative == Scenario.cacheRunLog {
                for version in String(decoding: contents, as: UTF8.self).split(separator: "\n") {
                    cacheRuns[String(version), default: 0] += 1
                }
            } else {
                lines.append("thumbnails \(relative) \(contents.count) bytes, FNV-1a \(Self.fnv1a(contents))")
            }
        }
    }

    /// The first line where `self` and `expected` differ, described, or `nil` when they are equal.
    func difference(from expected: ScenarioSnapshot) -> String? {
        guard lines != expected.lines else { return nil }
        let index = lines.indices.first { $0 >= expected.lines.count || lines[$0] != expected.lines[$0] } ?? lines.count
        let actualLine = index < lines.count ? lines[index] : "(end)"
        let expectedLine = index < expected.lines.count ? expected.lines[index] : "(end)"
        return "line \(index) of \(lines.count) (expected \(expected.lines.count)): got \(actualLine), "
            + "expected \(expectedLine)"
    }

    private static func describe(_ states: [String: LevelState]) -> String {
        states.sorted { $0.key < $1.key }
            .map { "\($0.key)=\($0.value.level?.description ?? "none")/\($0.value.appVersion?.description ?? "none")" }
            .joined(separator: ",")
    }

    private static func fnv1a(_ data: Data) -> String {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in data { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        return String(hash, radix: 16)
    }
}

/// The scenario's migrations, as its stores count them.
enum ScenarioMigrations {
    static let preferences = ["1.0", "1.1", "2.0"].map(Scenario.counterKey)
    static let database = ["1.0", "1.1", "1.2", "2.0"]
    static let cache = ["1.0", "2.0"]
    static let steps = preferences.count + database.count + cache.count

    /// Whether every transactional step ran exactly once and every cache step at least once.
    static func check(_ snapshot: ScenarioSnapshot, _ context: String, cacheExactlyOnce: Bool = false) {
        #expect(snapshot.leftovers.isEmpty, "temporary files left behind: \(snapshot.leftovers); \(context)")
        #expect(snapshot.preferenceCounts == Dictionary(uniqueKeysWithValues: preferences.map { ($0, 1) }),
                "preferences steps must apply exactly once; \(context)")
        #expect(snapshot.databaseCounts == Dictionary(uniqueKeysWithValues: database.map { ($0, 1) }),
                "database steps must apply exactly once; \(context)")
        #expect(snapshot.history == database.map { "library@\($0)" }, "one history row per step; \(context)")
        #expect(Set(snapshot.cacheRuns.keys) == Set(cache), "every cache step ran; \(context)")
        if cacheExactlyOnce {
            #expect(snapshot.cacheRuns == Dictionary(uniqueKeysWithValues: cache.map { ($0, 1) }),
                    "without a crash every cache step runs once; \(context)")
        }
    }
}

@Suite(.serialized) struct CrashTests {
    /// Kills the runner with SIGKILL at random moments, relaunches it until it completes, and
    /// compares every store with an uninterrupted run's. `STORE_MIGRATIONS_CRASH_KILLS` sets the
    /// number of kills (50 by default), `STORE_MIGRATIONS_CRASH_SEED` replays a failing seed.
    @Test(.timeLimit(.minutes(30)))
    func killedAtRandomMomentsTheStoresEndAsAnUninterruptedRunLeavesThem() throws {
        let runner = try CrashRunnerExecutable()
        let kills = environmentCount("STORE_MIGRATIONS_CRASH_KILLS", default: 50)
        let seed = environmentSeed("STORE_MIGRATIONS_CRASH_SEED")
        var random = SeededGenerator(seed: seed)
        let folder = try TemporaryFolder()
        let logs = folder.file("logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        let began = ContinuousClock.now

        let referenceDirectory = folder.file("reference")
        let referenceStart = ContinuousClock.now
        let reference = try runner.run(["migrate", referenceDirectory.path], logs: logs)
        let referenceDuration = (ContinuousClock.now - referenceStart).seconds
        try #require(reference.succeeded, "the uninterrupted run failed: \(reference)")
        #expect(reference.stepOutcomes.count == ScenarioMigrations.steps)
        #expect(reference.stepOutcomes.values.allSatisfy { $0 == "applied" })
        let expected = try ScenarioSnapshot(directory: referenceDirectory)
        ScenarioMigrations.check(expected, "uninterrupted run", cacheExactlyOnce: true)

        // Kill moments are drawn over the whole of an uninterrupted run, process start included,
        // with a margin for slower launches.
        let window = referenceDuration * 1.5
        var killed = 0, trials = 0, launches = 0, cacheReruns = 0
        while killed < kills {
            trials += 1
            let directory = folder.file("trial-\(trials)")
            // A relaunch may take longer than a fresh run (recovery, leftovers, a slow disk), so
            // a trial stops killing after a few launches and lets the last one complete.
            let killsThisTrial = Int.random(in: 2...8, using: &random)
            var delays: [String] = []
            var completed = false
            while !completed {
                launches += 1
                let delay = delays.count < killsThisTrial ? Double.random(in: 0..<window, using: &random) : 600
                delays.append(String(format: "%.1f ms", delay * 1_000))
                let child = try runner.start(["migrate", directory.path], logs: logs)
                if let exit = child.wait(timeout: delay) {
                    try #require(exit.succeeded, "seed \(seed), trial \(trials), kills at \(delays): \(exit)")
                    completed = true
                } else {
                    let exit = child.kill()
                    // The process may have finished between the deadline and the signal.
                    if exit.signal == nil {
                        try #require(exit.succeeded, "seed \(seed), trial \(trials), kills at \(delays): \(exit)")
                        completed = true
                    } else {
                        killed += 1
                    }
                }
            }

            let context = "seed \(seed), trial \(trials), launches ended at \(delays)"
            let actual = try ScenarioSnapshot(directory: directory)
            #expect(actual.difference(from: expected) == nil, "\(context)")
            ScenarioMigrations.check(actual, context)
            cacheReruns += actual.cacheRuns.values.reduce(0, +) - ScenarioMigrations.cache.count
            try FileManager.default.removeItem(at: directory)
        }
        print("""
            CrashTests: \(killed) kills in \(trials) trials, \(launches) launches, \(cacheReruns) cache step \
            re-runs, uninterrupted run \(String(format: "%.0f ms", referenceDuration * 1_000)), \
            \(String(format: "%.1f s", (ContinuousClock.now - began).seconds)) in all (seed \(seed))
            """)
    }
}
