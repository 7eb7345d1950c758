import Foundation
import Testing
@testable import CrashRunner
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// A rolling deploy on one store: processes of app 1.0 and app 2.0 started together (issue 20:
/// an old process returned success although its own steps, reading the record under the lock,
/// found the store migrated to 2.0, in 3 of 16 trials).
@Suite struct RollingDeployTests {
    let runner: CrashRunnerExecutable
    let folder: TemporaryFolder
    let logs: URL

    init() throws {
        runner = try CrashRunnerExecutable()
        folder = try TemporaryFolder()
        logs = folder.file("logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
    }

    /// Two 1.0 and two 2.0 processes a trial: no 1.0 process returns success after a step of its
    /// own found the store past 1.0, each step runs once, the record ends at app version 2.0, and
    /// a 1.0 process launched afterwards is refused without changing a byte.
    @Test(arguments: ["prefs", "library"])
    func oldAndNewAppsRacedOnOneStore(store: String) throws {
        let kind = try #require(RollingScenario.Store(rawValue: store))
        var outcomes: [RollingDeployOutcome: Int] = [:]
        for trial in 1...8 {
            let directory = folder.file("\(store)-\(trial)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let gate = folder.file("\(store)-gate-\(trial)")
            let apps = ["1.0", "2.0", "1.0", "2.0"]
            let children = try apps.map { app in
                try runner.start(["rolling", directory.path, store, app, gate.path], logs: logs)
            }
            try Data().write(to: gate)
            let exits = children.map { $0.wait(timeout: eventWaitBound) ?? $0.kill() }
            for (app, exit) in zip(apps, exits) {
                if app == "2.0" {
                    #expect(exit.succeeded, "trial \(trial): \(exit)")
                } else if let outcome = exit.rollingDeployOutcome(appVersion: "1.0") {
                    outcomes[outcome, default: 0] += 1
                }
            }
            let every = RollingScenario.versions(upTo: "2.0").map(\.description)
            #expect(try runs(kind, in: directory) == Dictionary(uniqueKeysWithValues: every.map { ($0, 1) }), "trial \(trial)")
            let record = try #require(try records(kind, in: directory)[RollingScenario.managerName])
            #expect(record.level == "2.0" && record.appVersion == "2.0", "trial \(trial): \(record)")

            let before = try bytes(of: directory)
            let relaunch = try runner.run(["rolling", directory.path, store, "1.0", gate.path], logs: logs)
            #expect(relaunch.rollingDeployOutcome(appVersion: "1.0") == .refusedAtPlanning, "trial \(trial)")
            #expect(try bytes(of: directory) == before, "trial \(trial): the refused relaunch changed no byte")
        }
        print("RollingDeployTests \(store): app 1.0 processes \(outcomes)")
    }

    /// How many times each version's body ran, as the bodies counted in the store.
    func runs(_ store: RollingScenario.Store, in directory: URL) throws -> [String: Int] {
        switch store {
        case .prefs:
            let data = try Data(contentsOf: directory.appendingPathComponent(RollingScenario.preferencesName))
            let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
            let counts = object?["runs"] as? [String: Int] ?? [:]
            return Dictionary(uniqueKeysWithValues: counts.map { key, count in
                (String(key.dropFirst()).replacingOccurrences(of: "_", with: "."), count)
            })
        case .library:
            return try SQLiteStore(url: directory.appendingPathComponent(RollingScenario.databaseName)).read { db in
                Dictionary(uniqueKeysWithValues: try db.rows("SELECT version, count(*) FROM runs GROUP BY version").map {
                    (try $0[0] as String, try $0[1] as Int)
                })
            }
        }
    }

    func records(_ store: RollingScenario.Store, in directory: URL) throws -> [String: MigrationRecord] {
        switch store {
        case .prefs: return try PreferencesStore(url: directory.appendingPathComponent(RollingScenario.preferencesName)).readRecords()
        case .library: return try SQLiteStore(url: directory.appendingPathComponent(RollingScenario.databaseName)).readRecords()
        }
    }

    /// Every file of `directory` and its bytes, except SQLite's shared-memory index (`-shm`),
    /// which readers write to.
    func bytes(of directory: URL) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for path in try FileManager.default.subpathsOfDirectory(atPath: directory.path) where !path.hasSuffix("-shm") {
            files[path] = try Data(contentsOf: directory.appendingPathComponent(path))
        }
        return files
    }
}
