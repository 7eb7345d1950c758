import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

// The code samples of the DocC articles in Sources/StoreMigrations/StoreMigrations.docc, as
// written there, run on real files (and, for Server Replicas, on the tests' PostgreSQL server).
// A sample that changes in an article changes here too.

/// The calendar app of the *Schema Evolution* article, as version 1.0 left it: a database of
/// calendars and events, a view, and a preferences file with the old keys.
struct CalendarAppVersion1 {
    let folder: TemporaryFolder
    var dbURL: URL { folder.file("library.sqlite") }
    var prefsURL: URL { folder.file("preferences.json") }

    init(view: Bool = true) throws {
        folder = try TemporaryFolder()
        try Data(#"{"showHelp": true, "lastSync": "2024-03-01T10:00:00Z", "legacyFlag": 1, "lastEventID": 7}"#.utf8)
            .write(to: prefsURL)
        let store = SQLiteStore(url: dbURL)
        try store.write { db in
            try db.execute("""
                CREATE TABLE calendar(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
                CREATE TABLE event(
                    id INTEGER PRIMARY KEY, calendar_id INTEGER REFERENCES calendar(id), title TEXT,
                    starts_on TEXT, note TEXT, legacy_flag INTEGER);
                CREATE INDEX event_on_starts_on ON event(starts_on);
                INSERT INTO calendar(id, name) VALUES (1, 'Home'), (2, 'Old');
                """)
            if view { try db.execute("CREATE VIEW event_notes AS SELECT id, note FROM event") }
            let insert = try db.prepare(
                "INSERT INTO event(calendar_id, title, starts_on, note, legacy_flag) VALUES (?, ?, ?, ?, ?)")
            for number in 1...40 {
                try insert.execute(arguments: [
                    .integer(number % 4 == 0 ? 2 : 1), .text("  Event \(number) "),
                    .text("2024-01-\(String(format: "%02d", number % 28 + 1))"), .text("note \(number)"), .integer(1),
                ])
            }
        }
        store.close()
    }

    func columns(of table: String) throws -> [String] {
        try SQLiteStore(url: dbURL).read { db in try db.tableInfo(table).map(\.name) }
    }

    func scalar<T: DatabaseValueConvertible>(_ sql: String, as type: T.Type = T.self) throws -> T? {
        try SQLiteStore(url: dbURL).read { db in try db.scalar(sql, as: T.self) }
    }
}

@Suite struct SchemaEvolutionArticleTests {
    /// Every sample of the article's story, from 1.0 to 2.0, in one launch.
    @Test func theWholeStoryMigratesVersion1To2() throws {
        let app = try CalendarAppVersion1()
        let dbURL = app.dbURL, prefsURL = app.prefsURL

        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let prefs = try coordinator.manager(
            "preferences", store: PreferencesStore(url: prefsURL))
        let library = try coordinator.manager(
            "library", store: SQLiteStore(url: dbURL))

        // Add a column
        library.register("1.1") { db in
            try db.addColumn("guid", type: .text, to: "event")
            try db.addColumn("archived", type: .integer, to: "event",
                             notNull: true, defaultValue: 0)
        }

        // Transform rows in batches
        library.register("1.1-1") { db in
            try db.transformRows(
                in: "event", columns: ["title", "guid"], where: "guid IS NULL"
            ) { row in
                let title: String? = try row["title"]
                let trimmed = title?.trimmingCharacters(in: .whitespaces) ?? ""
                return ["guid": .text(UUID().uuidString), "title": .text(trimmed)]
            }
            try db.createIndex("event_on_guid", on: "event", columns: ["guid"],
                               unique: true)
        }

        // Rename or drop a column
        library.register("1.2") { db in
            try db.renameColumn("starts_on", to: "starts_at", in: "event")
            try db.dropColumn("legacy_flag", from: "event")
        }

        // A column that a view reads
        library.register("1.3") { db in
            try db.dropColumn("note", from: "event", dependents: .drop)
            try db.execute("CREATE VIEW event_notes AS SELECT id, title FROM event")
        }

        // Rebuild a table
        library.register("1.4") { db in
            try db.rebuildTable(
                "event",
                definition: """
                    id INTEGER PRIMARY KEY,
                    calendar_id INTEGER REFERENCES calendar(id),
                    title TEXT NOT NULL DEFAULT '',
                    starts_at INTEGER,
                    guid TEXT,
                    archived INTEGER NOT NULL DEFAULT 0
                    """,
                copying: [
                    "title": "coalesce(title, '')",
                    "starts_at": "strftime('%s', starts_at)",
                ])
        }

        // Steps outside a transaction
        library.register("2.0", transaction: .none) { db in
            try db.execute("VACUUM")
        }

        // Rename preferences keys
        prefs.register("1.1") { defaults in
            try defaults.renameKey("showHelp", to: "onboarding.showHelp")
            try defaults.renameKey("lastSync", to: "sync.lastDate")
            defaults.removeValue(for: "legacyFlag")
        }

        // Depend on another store
        prefs.register("2.0", dependsOn: [library.migration("1.1-1")]) { defaults in
            guard let id = defaults.int("lastEventID") else { return }
            let guid = try library.store.read { db in
                try db.scalar("SELECT guid FROM event WHERE id = ?",
                              arguments: [.integer(Int64(id))], as: String.self)
            }
            defaults.removeValue(for: "lastEventID")
            if let guid { try defaults.set(guid, for: "lastEvent.guid") }
        }

        let steps = try coordinator.plan().steps.map(\.id.description)
        #expect(try #require(steps.firstIndex(of: "preferences@2.0")) > #require(steps.firstIndex(of: "library@1.1-1")))
        let report = try coordinator.run()
        #expect(report.succeeded)
        #expect(report.steps.count == 8 && report.steps.allSatisfy { $0.outcome == .applied })
        library.store.close()

        // The database: the columns of 2.0, every row kept, rewritten as the samples say.
        #expect(try app.columns(of: "event") == ["id", "calendar_id", "title", "starts_at", "guid", "archived"])
        #expect(try app.columns(of: "event_notes") == ["id", "title"])
        #expect(try app.scalar("SELECT count(*) FROM event", as: Int.self) == 40)
        #expect(try app.scalar("SELECT count(DISTINCT guid) FROM event", as: Int.self) == 40)
        #expect(try app.scalar("SELECT count(*) FROM event WHERE title LIKE ' %' OR title LIKE '% '", as: Int.self) == 0)
        #expect(try app.scalar("SELECT title FROM event WHERE id = 3", as: String.self) == "Event 3")
        #expect(try app.scalar("SELECT starts_at FROM event WHERE id = 1", as: Int64.self) == 1_704_153_600)  // 2024-01-02
        #expect(try app.scalar("SELECT typeof(starts_at) FROM event WHERE id = 1", as: String.self) == "integer")
        let indexes = try SQLiteStore(url: dbURL).read { db in try db.indexes(on: "event") }
        #expect(indexes.map(\.name) == ["event_on_guid", "event_on_starts_on"])
        #expect(indexes.first { $0.name == "event_on_starts_on" }?.columns == ["starts_at"], "the index followed the rename")
        #expect(indexes.first { $0.name == "event_on_guid" }?.isUnique == true)
        #expect(try app.scalar("PRAGMA freelist_count", as: Int.self) == 0, "VACUUM ran")
        #expect(try app.scalar("PRAGMA integrity_check", as: String.self) == "ok")
        #expect(try library.appliedMigrations() == ["1.1", "1.1-1", "1.2", "1.3", "1.4", "2.0"])

        // The preferences: keys renamed, the event's id replaced by its guid.
        let defaults = try PreferencesStore(url: prefsURL).read()
        let lastEventGUID = try app.scalar("SELECT guid FROM event WHERE id = 7", as: String.self)
        #expect(defaults.bool("onboarding.showHelp") == true)
        #expect(defaults.string("sync.lastDate") == "2024-03-01T10:00:00Z")
        #expect(defaults.string("lastEvent.guid") == lastEventGUID)
        #expect(!defaults.contains("legacyFlag") && !defaults.contains("lastEventID") && !defaults.contains("showHelp"))

        // Nothing left to do.
        #expect(try coordinator.plan().isUpToDate)
    }

    /// The refusal: a view reads the column, and the step changes nothing.
    @Test func droppingAColumnAViewReadsIsRefusedUntilDependentsAreDropped() throws {
        let app = try CalendarAppVersion1()
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let library = try coordinator.manager("library", store: SQLiteStore(url: app.dbURL))
        let printed = Locked<[String]>([])
        func print(_ item: Any) { printed.value.append("\(item)") }

        library.register("1.3") { db in
            try db.dropColumn("note", from: "event")
        }

        do {
            try coordinator.run()
        } catch let error as MigrationRunError {
            let refusal = (error.underlyingError as? SQLiteStoreError)?.reason
            if case let .dependentSchemaObject(object, column, table)? = refusal {
                print("\(object) reads \(table).\(column)")
                // view "event_notes" reads event.note
            }
        }

        #expect(printed.value == [#"view "event_notes" reads event.note"#])
        let again = try #require(throws: MigrationRunError.self) { try coordinator.run() }
        let refusal = try #require(again.underlyingError as? SQLiteStoreError)
        #expect(refusal.migration == library.migration("1.3"))
        #expect(refusal.description.contains("pass dependents: .drop to the helper"))
        library.store.close()
        #expect(try app.columns(of: "event") == ["id", "calendar_id", "title", "starts_on", "note", "legacy_flag"])
        #expect(try app.columns(of: "event_notes") == ["id", "note"])
        #expect(try library.appliedMigrations().isEmpty)
    }

    /// Foreign keys in a deferred store: a step that leaves rows pointing at a deleted parent
    /// fails and keeps nothing; deleting the children first passes.
    @Test func aStepThatBreaksAForeignKeyFailsNamingTheRows() throws {
        let app = try CalendarAppVersion1()
        do {
            let coordinator = MigrationCoordinator(appVersion: "2.0")
            let library = try coordinator.manager("library", store: SQLiteStore(url: app.dbURL))
            let printed = Locked<[String]>([])
            func print(_ item: Any) { printed.value.append("\(item)") }

            library.register("1.5") { db in
                try db.execute("DELETE FROM calendar WHERE name = 'Old'")
            }

            do {
                try coordinator.run()
            } catch let error as MigrationRunError {
                let failure = error.underlyingError as? SQLiteError
                if let failure, failure.isForeignKeyViolation {
                    for violation in failure.foreignKeyViolations {
                        print(violation)   // event rowid 4 → calendar (foreign key 0)
                    }
                }
            }

            #expect(printed.value.count == 10)
            #expect(printed.value.first == "event rowid 4 → calendar (foreign key 0)")
            library.store.close()
            #expect(try app.scalar("SELECT count(*) FROM calendar", as: Int.self) == 2, "rolled back")
        }

        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let library = try coordinator.manager("library", store: SQLiteStore(url: app.dbURL))
        library.register("1.5") { db in
            try db.execute("""
                DELETE FROM event
                WHERE calendar_id IN (SELECT id FROM calendar WHERE name = 'Old')
                """)
            try db.execute("DELETE FROM calendar WHERE name = 'Old'")
            // Fails here, not at commit, if an event still points at it:
            try db.checkForeignKeys(in: ["event"])
        }
        try coordinator.run()
        library.store.close()
        #expect(try app.scalar("SELECT count(*) FROM calendar", as: Int.self) == 1)
        #expect(try app.scalar("SELECT count(*) FROM event", as: Int.self) == 30)
    }

    /// `.immediate`: the statement itself fails.
    @Test func anImmediateStoreEnforcesForeignKeysAsEachStatementRuns() throws {
        let app = try CalendarAppVersion1()
        let dbURL = app.dbURL
        let coordinator = MigrationCoordinator(appVersion: "2.0")

        let library = try coordinator.manager(
            "library", store: SQLiteStore(url: dbURL, foreignKeyCheck: .immediate))

        library.register("1.5") { db in
            try db.execute("DELETE FROM calendar WHERE name = 'Old'")
        }
        let error = try #require(throws: MigrationRunError.self) { try coordinator.run() }
        let failure = try #require(error.underlyingError as? SQLiteError)
        #expect(failure.isForeignKeyViolation)
        #expect(failure.sql == "DELETE FROM calendar WHERE name = 'Old'")
        library.store.close()
        #expect(try app.scalar("SELECT count(*) FROM calendar", as: Int.self) == 2)
    }

    /// A late migration: 1.2 shipped, then 1.1.1 was merged.
    @Test func aLateMigrationIsListedRunsOnceOrIsRefused() throws {
        let app = try CalendarAppVersion1()
        let dbURL = app.dbURL
        let printed = Locked<[String]>([])
        func print(_ item: Any) { printed.value.append("\(item)") }
        // Release 1.2's coordinator: 1.1 and 1.2 registered.
        func release12() throws -> (MigrationCoordinator, MigrationManager<SQLiteStore>) {
            let coordinator = MigrationCoordinator(appVersion: "1.2")
            let library = try coordinator.manager("library", store: SQLiteStore(url: dbURL))
            library.register("1.1") { db in try db.addColumn("guid", type: .text, to: "event") }
            library.register("1.2") { db in try db.renameColumn("starts_on", to: "starts_at", in: "event") }
            return (coordinator, library)
        }
        do {
            let (coordinator, library) = try release12()
            try coordinator.run()
            library.store.close()
        }

        // Refused under `.fail`.
        do {
            let (coordinator, library) = try release12()
            library.register("1.1.1") { db in
                try db.execute("""
                    UPDATE event SET title = trim(title) WHERE title <> trim(title)
                    """)
            }

            library.lateMigrationPolicy = .fail

            do {
                try coordinator.run()
            } catch let MigrationError.lateMigrations(manager, _, versions, level, _) {
                print("\(manager) is at \(level) but never ran \(versions)")
            }

            #expect(printed.value == ["library is at 1.2 but never ran [1.1.1]"])
            library.store.close()
            #expect(try app.scalar("SELECT count(*) FROM event WHERE title <> trim(title)", as: Int.self) == 40)
        }

        // Listed, then run once under `.run`.
        printed.value = []
        let (coordinator, library) = try release12()
        library.register("1.1.1") { db in
            try db.execute("""
                UPDATE event SET title = trim(title) WHERE title <> trim(title)
                """)
        }

        let plan = try coordinator.plan()
        for manager in plan.managers where !manager.late.isEmpty {
            print("\(manager.name): late \(manager.late)") // library: late [1.1.1]
        }

        #expect(printed.value == ["library: late [1.1.1]"])
        let report = try coordinator.run()
        #expect(report.steps.map(\.step.id.description) == ["library@1.1.1"])
        #expect(report.managers.map(\.levelAfter) == ["1.2"])
        library.store.close()
        #expect(try app.scalar("SELECT count(*) FROM event WHERE title <> trim(title)", as: Int.self) == 0)
        #expect(try app.columns(of: "event").contains("starts_at"))
    }

    /// A rename meets a file that never had the key, and refuses to overwrite one.
    @Test func renamingAKeyThatIsMissingDoesNothingAndOneThatExistsThrows() throws {
        var defaults = Preferences(["onboarding.showHelp": .bool(false), "showHelp": .bool(true)])
        #expect(try defaults.renameKey("lastSync", to: "sync.lastDate") == false)
        #expect(throws: PreferencesError.destinationExists(source: "showHelp", destination: "onboarding.showHelp")) {
            try defaults.renameKey("showHelp", to: "onboarding.showHelp")
        }
        #expect(defaults.bool("showHelp") == true && defaults.bool("onboarding.showHelp") == false)
    }
}
