import Foundation
import Testing
import StoreMigrations
import TestSupport

/// A fresh install created from the declared schema, killed inside the creation's transaction
/// (`CrashRunner created`, the `SchemaCreatedScenario`): the database, built aside, was never
/// linked into place, and the next launch creates it once and records every migration of the
/// history.
@Suite struct SchemaCreationKillTests {
    @Test func aKillDuringTheCreationLeavesNothingAndTheNextLaunchCreatesItOnce() throws {
        let folders = try ScenarioFolders()
        let runner = try CrashRunnerExecutable()
        let (folder, directory, logs) = (folders.folder, folders.store, folders.logs)
        let database = directory.appendingPathComponent("created.sqlite").path

        let killed = try runner.killWhileHolding(["created", directory.path], holding: folder.file("holding"), logs: logs)
        #expect(killed.signal != nil)
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(!left.contains { $0.hasPrefix("created.sqlite") }, "\(left)")
        #expect(left.contains { $0.hasPrefix(".created.sqlite.") && $0.hasSuffix(".creating") }, "\(left)")
        let userSchema = "SELECT name FROM sqlite_master WHERE tbl_name NOT LIKE 'store_migrations%' ORDER BY name"

        let exit = try runner.run(["created", directory.path], logs: logs)
        #expect(exit.succeeded, "\(exit)")
        #expect(exit.stepOutcomes == ["library:squash@2.0": "applied"])
        // The killed process's file aside, of this PID namespace, was removed by the creation.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains(".creating") } == [])
        #expect(try RawSQLite.strings(userSchema, at: database) == ["calls", "note", "note_on_guid", "tag"])
        #expect(try RawSQLite.strings("SELECT count(*) FROM calls", at: database) == ["1"])
        #expect(try RawSQLite.strings("SELECT title FROM note", at: database) == ["Welcome"])
        #expect(try RawSQLite.strings(
            "SELECT version || ' ' || name FROM store_migrations_history WHERE manager = 'library' ORDER BY id",
            at: database) == ["1.0 notes", "1.1 welcome", "2.0 guids and tags"])
    }
}
