import Foundation
import Testing
import StoreMigrations
import TestSupport

/// A squashed fresh install killed inside the squash's transaction (`CrashRunner squashed`, the
/// ``SquashedScenario``): the database keeps nothing of it, and the next launch runs it once,
/// records every replaced migration, then what depends on the range.
@Suite struct SquashKillTests {
    @Test func aKillDuringASquashedFreshInstallLeavesNothingAndTheNextLaunchFinishesIt() throws {
        let folders = try ScenarioFolders()
        let runner = try CrashRunnerExecutable()
        let (folder, directory, logs) = (folders.folder, folders.store, folders.logs)
        let database = directory.appendingPathComponent("squashed.sqlite").path
        let preferences = directory.appendingPathComponent("squashed.json")

        let killed = try runner.killWhileHolding(["squashed", directory.path], holding: folder.file("holding"), logs: logs)
        #expect(killed.signal != nil)
        let userTables = "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'store_migrations%' ORDER BY name"
        #expect(try RawSQLite.strings(userTables, at: database) == [])
        #expect(try RawSQLite.recordedVersions(at: database) == [])
        #expect(!FileManager.default.fileExists(atPath: preferences.path))

        let exit = try runner.run(["squashed", directory.path], logs: logs)
        #expect(exit.succeeded, "\(exit)")
        #expect(exit.stepOutcomes == ["library:squash@1.2": "applied", "library@2.0": "applied", "prefs@2.0": "applied"])
        #expect(try RawSQLite.strings(userTables, at: database) == ["calls", "note", "tag"])
        #expect(try RawSQLite.strings("SELECT count(*) FROM calls", at: database) == ["1"])
        #expect(try RawSQLite.strings("SELECT guid FROM note", at: database) == ["after the squash"])
        #expect(try RawSQLite.strings(
            "SELECT version || ' ' || coalesce(name, '-') FROM store_migrations_history WHERE manager = 'library' ORDER BY id",
            at: database) == ["1.0 notes", "1.1 guids", "1.2 tags", "2.0 -"])
        #expect(try String(contentsOf: preferences, encoding: .utf8).contains("ranAfterLibrary"))
    }
}
