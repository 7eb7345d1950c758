import Foundation
import Testing
@testable import CrashRunner
@testable import StoreMigrations
import TestSupport

/// Two processes that both planned the reset of a cache a newer app wrote (level 3.0, app
/// version 2.0, `.reset`): the cache is reset once, each migration runs once between them, and
/// the second reset never wipes what the first process migrated.
@Suite struct CacheResetRaceTests {
    let runner: CrashRunnerExecutable
    let folder: TemporaryFolder
    let logs: URL

    init() throws {
        runner = try CrashRunnerExecutable()
        folder = try TemporaryFolder()
        logs = folder.file("logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
    }

    /// A cache at level 3.0 with a newer app's file, written by hand.
    func makeNewerCache(in directory: URL) throws -> URL {
        let cache = directory.appendingPathComponent(CacheResetScenario.cacheName, isDirectory: true)
        try FileManager.default.createDirectory(at: cache, withIntermediateDirectories: true)
        try Data(#"{"levels": {"cache": {"level": "3.0", "applied": ["1.0", "2.0", "3.0"]}}}"#.utf8)
            .write(to: cache.appendingPathComponent(".store-migrations.json"))
        try Data("thumbnail format 3".utf8).write(to: cache.appendingPathComponent("v3.txt"))
        return cache
    }

    /// - Parameters:
    ///   - round: tells the runs apart (three without delay, as their interleavings vary).
    ///   - delay: how long the second process waits after both planned; long enough,
    ///     its reset comes after the first process has migrated the cache.
    @Test(arguments: [(1, 0), (2, 0), (3, 0), (4, 0.3)] as [(Int, Double)])
    func twoProcessesResettingOneNewerCacheResetItOnceAndRunEachMigrationOnce(round: Int, delay: Double) throws {
        let directory = folder.file("stores-\(UUID().uuidString)")
        let cache = try makeNewerCache(in: directory)
        let gate = folder.file("gate-\(UUID().uuidString)")
        let planned = (folder.file("planned-a-\(UUID().uuidString)"), folder.file("planned-b-\(UUID().uuidString)"))
        let children = [
            try runner.start(["cache-reset", directory.path, gate.path, planned.0.path, planned.1.path], logs: logs),
            try runner.start(["cache-reset", directory.path, gate.path, planned.1.path, planned.0.path, "\(delay)"], logs: logs),
        ]
        try Data().write(to: gate)
        let exits = children.map { $0.wait(timeout: eventWaitBound) ?? $0.kill() }
        for exit in exits { #expect(exit.succeeded, "\(exit)") }

        // Both planned the reset; each step applied in exactly one process.
        let steps = ["cache:reset", "cache@1.0", "cache@2.0"]
        for exit in exits {
            #expect(exit.stepOutcomes.keys.sorted() == steps.sorted(), "\(exit)")
            #expect(exit.levels.contains("level cache 2.0"), "\(exit)")
        }
        for step in steps {
            let outcomes = exits.map { $0.stepOutcomes[step] ?? "missing" }.sorted()
            #expect(outcomes == ["alreadyApplied", "applied"], "\(step): \(outcomes)")
        }
        if delay > 0 {
            #expect(exits[1].stepOutcomes.values.allSatisfy { $0 == "alreadyApplied" }, "the late process found everything done: \(exits[1])")
        }

        // Each migration's effect once, none wiped.
        let log = try String(contentsOf: cache.appendingPathComponent(CacheResetScenario.logName), encoding: .utf8)
        let versions = log.split(separator: "\n").map { $0.split(separator: " ")[0] }
        #expect(versions.sorted() == ["1.0", "2.0"], "runs.log:\n\(log)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache.path).sorted()
            == [".store-migrations.json", "1.0.txt", "2.0.txt", "runs.log"])
        #expect(try String(contentsOf: cache.appendingPathComponent("1.0.txt"), encoding: .utf8) == "written by 1.0\n")
        let record = try #require(try CacheStore(directory: cache).readRecords()["cache"])
        #expect(record.appliedVersions == ["1.0", "2.0"] && record.baseline == nil && record.level == "2.0")
    }
}
