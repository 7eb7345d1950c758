import Dispatch
import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// Real stores on disk, several managers, cross-store dependencies, run in parallel.
@Suite struct MultiStoreIntegrationTests {
    @Test func twoManagersOnOneDatabaseAndOneOnPreferences() throws {
        let folder = try TemporaryFolder()
        let database = SQLiteStore(url: folder.file("app.sqlite"))
        let preferences = PreferencesStore(url: folder.file("prefs.json"))
        try database.write { db in
            try db.execute("CREATE TABLE event(id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
            for index in 1...500 { try db.execute("INSERT INTO event(name) VALUES (?)", arguments: [.text("e\(index)")]) }
        }
        try Data(#"{"showHelp": true, "theme": "dark"}"#.utf8).write(to: folder.file("prefs.json"))

        let order = EventLog()
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        coordinator.maxConcurrentStores = 2
        let events = try coordinator.manager("events", store: database)
        let search = try coordinator.manager("search", store: database)
        let prefs = try coordinator.manager("prefs", store: preferences)

        // The preferences and the database start together: each waits for the other's first step.
        let prefsStarted = DispatchSemaphore(value: 0), databaseStarted = DispatchSemaphore(value: 0)
        prefs.register("1.1") { defaults in
            prefsStarted.signal()
            guard databaseStarted.waitForEvent() else { throw TestFailure(message: "no overlap") }
            try defaults.renameKey("showHelp", to: "onboarding.showHelp")
            order.append("prefs@1.1")
        }
        events.register("1.1") { db in
            databaseStarted.signal()
            guard prefsStarted.waitForEvent() else { throw TestFailure(message: "no overlap") }
            try db.addColumn("guid", type: .text, to: "event")
            try db.transformRows(in: "event", columns: ["id", "guid"]) { row in
                let id: Int64 = try row["id"]
                return ["guid": .text("guid-\(id)")]
            }
            order.append("events@1.1")
        }
        search.register("2.0", dependsOn: [events.migration("1.1"), prefs.migration("1.1")]) { db in
            try db.execute("CREATE TABLE search_index(guid TEXT PRIMARY KEY, name TEXT)")
            try db.execute("INSERT INTO search_index SELECT guid, name FROM event")
            order.append("search@2.0")
        }
        prefs.register("2.0", dependsOn: [search.migration("2.0")]) { defaults in
            try defaults.set(true, for: "search.enabled")
            order.append("prefs@2.0")
        }

        let plan = try coordinator.plan()
        #expect(plan.waves.map { $0.map(\.id.description) } == [["events@1.1", "prefs@1.1"], ["search@2.0"], ["prefs@2.0"]])
        let report = try coordinator.run()
        #expect(report.succeeded)
        #expect(Set(order.all.prefix(2)) == ["prefs@1.1", "events@1.1"])
        #expect(Array(order.all.dropFirst(2)) == ["search@2.0", "prefs@2.0"])

        // Levels, through fresh store objects as the next launch would read them.
        let reopened = SQLiteStore(url: folder.file("app.sqlite"))
        #expect(try reopened.states() == ["events": LevelState(level: "1.1"), "search": LevelState(level: "2.0")])
        #expect(try PreferencesStore(url: folder.file("prefs.json")).states() == ["prefs": LevelState(level: "2.0")])

        // Data.
        let indexed = try reopened.read { db in
            try db.rows("SELECT guid, name FROM search_index ORDER BY rowid").map { row -> String in
                let guid: String = try row["guid"], name: String = try row["name"]
                return "\(guid)=\(name)"
            }
        }
        #expect(indexed == (1...500).map { "guid-\($0)=e\($0)" })
        let defaults = try PreferencesStore(url: folder.file("prefs.json")).read()
        #expect(defaults.values == ["onboarding.showHelp": true, "theme": "dark", "search.enabled": true])
        let history = try reopened.read { db in
            try db.rows("SELECT manager, version FROM store_migrations_history ORDER BY id").map { row -> String in
                let manager: String = try row["manager"], version: String = try row["version"]
                return "\(manager)@\(version)"
            }
        }
        #expect(history == ["events@1.1", "search@2.0"])

        // The next launch has nothing to do.
        let next = MigrationCoordinator(appVersion: "2.0")
        for (name, store) in [("events", reopened), ("search", reopened)] {
            _ = try next.manager(name, store: store)
        }
        _ = try next.manager("prefs", store: PreferencesStore(url: folder.file("prefs.json")))
        #expect(try next.plan().isUpToDate)
    }

    @Test func failingDatabaseStepLeavesEveryStoreConsistent() throws {
        let folder = try TemporaryFolder()
        let database = SQLiteStore(url: folder.file("app.sqlite"))
        let preferences = PreferencesStore(url: folder.file("prefs.json"))
        try database.write { db in try db.execute("CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT)") }

        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let notes = try coordinator.manager("notes", store: database)
        let prefs = try coordinator.manager("prefs", store: preferences)
        notes.register("2.0") { db in
            try db.execute("INSERT INTO note(title) VALUES ('half done')")
            try db.execute("INSERT INTO missing_table VALUES (1)")
        }
        prefs.register("1.0") { defaults in try defaults.set("kept", for: "independent") }
        prefs.register("2.0", dependsOn: [notes.migration("2.0")]) { defaults in try defaults.set("never", for: "dependent") }

        let error = try #require(throws: MigrationRunError.self) { try coordinator.run() }
        let outcomes = Dictionary(uniqueKeysWithValues: error.report.steps.map { ($0.step.id.description, $0.outcome) })
        #expect(outcomes.count == 3)
        #expect(outcomes["prefs@1.0"] == .applied)
        #expect(outcomes["prefs@2.0"] == .skipped(because: .init(manager: "notes", action: .migrate, version: "2.0")))
        let sqliteError = try #require(error.underlyingError as? SQLiteError)
        #expect(sqliteError.message.contains("no such table: missing_table"))
        #expect(sqliteError.sql == "INSERT INTO missing_table VALUES (1)")

        #expect(try database.read { db in try db.scalar("SELECT count(*) FROM note", as: Int.self) } == 0)
        #expect(try database.states()["notes"]?.level == nil)
        #expect(try preferences.read().values == ["independent": "kept"])
        #expect(try preferences.states() == ["prefs": LevelState(level: "1.0")])
    }
}
