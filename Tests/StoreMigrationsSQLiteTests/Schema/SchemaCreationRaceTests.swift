import Foundation
import Testing
import StoreMigrations
import TestSupport

/// Processes launched together on a new database created from the declared schema
/// (`CrashRunner created`, the `SchemaCreatedScenario`): each that finds no database builds one
/// aside, the first to link it into place wins, and the others' creations find it applied.
@Suite struct SchemaCreationRaceTests {
    @Test func processesCreatingOneDatabaseTogetherApplyTheCreationOnce() throws {
        let folders = try ScenarioFolders()
        let runner = try CrashRunnerExecutable()
        let directory = folders.store
        let database = directory.appendingPathComponent("created.sqlite").path

        let children = try (0..<4).map { _ in try runner.start(["created", directory.path], logs: folders.logs) }
        let exits = children.map { $0.wait(timeout: eventWaitBound) }

        #expect(exits.allSatisfy { $0?.succeeded == true }, "\(exits)")
        let outcomes = exits.compactMap { $0?.stepOutcomes["library:squash@2.0"] }
        #expect(outcomes.filter { $0 == "applied" }.count == 1, "\(outcomes)")
        #expect(outcomes.allSatisfy { $0 == "applied" || $0 == "alreadyApplied" }, "\(outcomes)")
        // The seed counts its runs in `calls`: one creation's survived.
        #expect(try RawSQLite.strings("SELECT count(*) FROM calls", at: database) == ["1"])
        #expect(try RawSQLite.strings("SELECT title FROM note", at: database) == ["Welcome"])
        #expect(try RawSQLite.strings(
            "SELECT version FROM store_migrations_history WHERE manager = 'library' ORDER BY id", at: database)
            == ["1.0", "1.1", "2.0"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: folders.store.path).filter { $0.contains(".creating") } == [])
    }
}
