import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif

private struct BodyFailure: Error, Equatable {
    let reason: String
}

@Suite struct SQLiteStoreTests {
    let scratch: TemporaryFolder
    let url: URL
    let store: SQLiteStore

    init() throws {
        scratch = try TemporaryFolder()
        url = scratch.file("library.sqlite")
        store = SQLiteStore(url: url)
    }

    /// Version 1.0 of the app's schema: calendars own events, with rows in both.
    func applyInitialSchema(to store: SQLiteStore) throws {
        let outcome = try store.apply(sqliteStep("1.0") { db in
            try db.execute("""
                CREATE TABLE calendar(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
                CREATE TABLE event(
                    id INTEGER PRIMARY KEY,
                    calendar_id INTEGER NOT NULL REFERENCES calendar(id) ON DELETE CASCADE,
                    title TEXT);
                CREATE INDEX event_on_calendar ON event(calendar_id);
                INSERT INTO calendar VALUES (1, 'Home'), (2, 'Work');
                """)
            let insert = try db.prepare("INSERT INTO event(calendar_id, title) VALUES (?, ?)")
            for number in 1...20 {
                try insert.execute(arguments: [.integer(Int64(number % 2 + 1)), .text("Event \(number)")])
            }
        })
        #expect(outcome.isApplied)
    }

    /// Every table's rows, including the store's own, by table name.
    func snapshot(_ store: SQLiteStore) throws -> [String: [[DatabaseValue]]] {
        try store.read { db in
            var tables: [String: [[DatabaseValue]]] = [:]
            for name in try db.rows("SELECT name FROM sqlite_master WHERE type = 'table'").map({ try $0["name"] as String }) {
                tables[name] = try db.rows("SELECT * FROM \(Database.quoted(name)) ORDER BY rowid").map(\.values)
            }
            tables["schema"] = try db.rows("SELECT type, name, sql FROM sqlite_master ORDER BY name").map(\.values)
            return tables
        }
    }

    // MARK: Opening

    @Test func missingFileIsAFirstLaunchWithoutStates() throws {
        let nested = SQLiteStore(url: scratch.url.appendingPathComponent("Application Support/db/library.sqlite"))
        #expect(try nested.readRecords().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: nested.url.deletingLastPathComponent().path), "planning creates nothing")
        try nested.write { _ in }
        #expect(FileManager.default.fileExists(atPath: nested.url.path))
        #expect(try nested.read { try $0.scalar("PRAGMA journal_mode", as: String.self) } == "wal")
        #expect(try nested.read { try $0.pragmaFlag("foreign_keys") })
        #expect(nested.description.contains("library.sqlite"))
    }

    @Test func fileThatIsNotADatabaseIsATypedErrorAndStaysUntouched() throws {
        let bytes = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try bytes.write(to: url)

        let read = try #require(#expect(throws: SQLiteError.self) { _ = try store.readRecords() })
        #expect(read.isNotADatabase)
        #expect(read.path == url.path)
        #expect(read.description.contains("not a SQLite database"))
        let apply = try #require(#expect(throws: SQLiteError.self) {
            _ = try store.apply(sqliteStep("1.0") { _ in Issue.record("the body must not run") })
        })
        #expect(apply.isNotADatabase)
        #expect(throws: SQLiteError.self) { try store.updateRecord(of: "library") { $0.setBaseline("1.0") } }
        #expect(try Data(contentsOf: url) == bytes)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path) == ["library.sqlite"])
    }

    // MARK: Applying

    @Test func applyCommitsDataLevelAndHistoryTogether() throws {
        try applyInitialSchema(to: store)
        let outcome = try store.apply(sqliteStep("1.1") { db in
            try db.addColumn("archived", type: .integer, to: "event", notNull: true, defaultValue: 0)
            try db.execute("UPDATE event SET archived = 1 WHERE id <= 5")
            Thread.sleep(forTimeInterval: 0.05)
        })
        #expect(outcome.isApplied)
        #expect(try store.states() == ["library": LevelState(level: "1.1")])

        let (archived, history) = try store.read { db in
            (try db.scalar("SELECT count(*) FROM event WHERE archived = 1", as: Int.self),
             try db.rows("SELECT manager, version, applied_at, duration_seconds FROM store_migrations_history ORDER BY id"))
        }
        #expect(archived == 5)
        #expect(history.count == 2)
        let last = try #require(history.last)
        #expect(try last["manager"] as String == "library")
        #expect(try last["version"] as String == "1.1")
        let appliedAt: String = try last["applied_at"]
        #expect(appliedAt.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil)
        let duration: Double = try last["duration_seconds"]
        #expect(duration >= 0.05 && duration < 10)
    }

    @Test func bodyThatThrowsPartWayLeavesEveryRowAndTheLevelAsBefore() throws {
        try applyInitialSchema(to: store)
        let before = try snapshot(store)
        let error = try #require(#expect(throws: BodyFailure.self) {
            _ = try store.apply(sqliteStep("1.1") { db in
                try db.execute("UPDATE event SET title = upper(title)")
                try db.execute("DELETE FROM event WHERE id > 10")
                try db.addColumn("guid", type: .text, to: "event")
                try db.execute("CREATE TABLE tag(id INTEGER PRIMARY KEY)")
                try db.transformRows(in: "event", columns: ["guid"]) { _ in ["guid": .text(UUID().uuidString)] }
                throw BodyFailure(reason: "disk of the mind is full")
            })
        })
        #expect(error == BodyFailure(reason: "disk of the mind is full"), "the body's error comes back unchanged")
        #expect(try snapshot(store) == before)
        #expect(try store.states()["library"]?.level == "1.0")
    }

    @Test func foreignKeyViolationLeftByTheBodyFailsTheStep() throws {
        try applyInitialSchema(to: store)
        let before = try snapshot(store)
        let error = try #require(#expect(throws: SQLiteError.self) {
            // Foreign keys are off during the body in deferred mode: no cascade, orphans remain.
            _ = try store.apply(sqliteStep("1.1") { db in try db.execute("DELETE FROM calendar WHERE id = 2") })
        })
        #expect(error.isForeignKeyViolation)
        #expect(error.foreignKeyViolations.count == 10)
        #expect(error.foreignKeyViolations.allSatisfy { $0.table == "event" && $0.parentTable == "calendar" })
        #expect(error.foreignKeyViolations.compactMap(\.rowID) == [1, 3, 5, 7, 9, 11, 13, 15, 17, 19])
        #expect(error.description.contains("event rowid 1 → calendar"))
        #expect(try snapshot(store) == before)
        #expect(try store.read { try $0.pragmaFlag("foreign_keys") }, "enforcement is back on after the step")
    }

    @Test func immediateModeEnforcesAsStatementsRun() throws {
        let store = SQLiteStore(url: url, foreignKeyCheck: .immediate)
        try applyInitialSchema(to: store)

        let orphan = try #require(#expect(throws: SQLiteError.self) {
            _ = try store.apply(sqliteStep("1.1") { db in
                try db.execute("INSERT INTO event(calendar_id, title) VALUES (99, 'orphan')")
            })
        })
        #expect(orphan.isForeignKeyViolation)
        #expect(orphan.sql == "INSERT INTO event(calendar_id, title) VALUES (99, 'orphan')")

        #expect(try store.apply(sqliteStep("1.1") { db in try db.execute("DELETE FROM calendar WHERE id = 2") }).isApplied)
        #expect(try store.read { try $0.scalar("SELECT count(*) FROM event", as: Int.self) } == 10, "the cascade ran")

        let atCommit = try #require(#expect(throws: SQLiteError.self) {
            _ = try store.apply(sqliteStep("1.2") { db in
                try db.execute("""
                    CREATE TABLE note(id INTEGER PRIMARY KEY,
                        event_id INTEGER REFERENCES event(id) DEFERRABLE INITIALLY DEFERRED);
                    INSERT INTO note(event_id) VALUES (1000);
                    """)
            })
        })
        #expect(atCommit.sql == "COMMIT")
        #expect(atCommit.foreignKeyViolations.map(\.table) == ["note"])
        #expect(try store.read { try $0.tableExists("note") } == false)
        #expect(try store.states()["library"]?.level == "1.1")
    }

    @Test func rebuildingACascadingParentKeepsItsChildrenInDeferredMode() throws {
        try applyInitialSchema(to: store)
        let events = try store.read { try $0.rows("SELECT * FROM event ORDER BY id").map(\.values) }
        let outcome = try store.apply(sqliteStep("1.1") { db in
            try db.rebuildTable("calendar", definition: "id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, color TEXT")
        })
        #expect(outcome.isApplied)
        #expect(try store.read { try $0.rows("SELECT * FROM event ORDER BY id").map(\.values) } == events)
        #expect(try store.read { try $0.indexes(on: "calendar").first?.origin } == .uniqueConstraint)
    }

    @Test func transformRowsReportsThroughTheStepsContext() throws {
        try applyInitialSchema(to: store)
        let log = ProgressLog()
        let run = log.run()
        let outcome = try store.apply(sqliteStep("1.1", run: run) { db in
            try db.addColumn("guid", type: .text, to: "event")
            try db.transformRows(in: "event", columns: ["guid"], batchSize: 6) { _ in ["guid": .text(UUID().uuidString)] }
        })
        #expect(outcome.isApplied)
        #expect(log.fractions == [0.3, 0.6, 0.9, 1])
        #expect(run.progress(ofStep: 0).fractionCompleted == 1)
        #expect(try store.read { try $0.scalar("SELECT count(DISTINCT guid) FROM event", as: Int.self) } == 20)
    }

    @Test func bodyCannotEndTheStoresTransaction() throws {
        let store = self.store
        try applyInitialSchema(to: store)
        let error = try #require(#expect(throws: SQLiteError.self) {
            _ = try store.apply(sqliteStep("1.1") { db in
                try db.execute("DELETE FROM event")
                try db.execute("COMMIT")
            })
        })
        #expect(error.code == SQLITE_AUTH)
        #expect(try store.read { try $0.scalar("SELECT count(*) FROM event", as: Int.self) } == 20)

        let afterNestedRead = try #require(#expect(throws: SQLiteError.self) {
            _ = try store.apply(sqliteStep("1.1") { db in
                #expect(try store.read { try $0.scalar("SELECT count(*) FROM event", as: Int.self) } == 20)
                try db.execute("ROLLBACK")
            })
        })
        #expect(afterNestedRead.code == SQLITE_AUTH, "a nested read keeps the guard in place")

        let outcome = try store.apply(sqliteStep("1.1") { db in
            try db.execute("SAVEPOINT attempt; DELETE FROM event; ROLLBACK TO attempt; RELEASE attempt;")
            try db.execute("DELETE FROM event WHERE id = 1")
        })
        #expect(outcome.isApplied)
        #expect(try store.read { try $0.scalar("SELECT count(*) FROM event", as: Int.self) } == 19)
    }

    // MARK: Levels

    @Test func alreadyAppliedLevelSkipsTheBody() throws {
        try store.updateRecord(of: "library") { $0.setBaseline("2.0") }
        var ran = false
        #expect(try store.apply(sqliteStep("1.1") { _ in ran = true }) == .alreadyApplied(level: "2.0"))
        #expect(try store.apply(sqliteStep("2.0") { _ in ran = true }) == .alreadyApplied(level: "2.0"))
        #expect(!ran)
        #expect(try store.apply(sqliteStep("2.0-1") { _ in ran = true }).isApplied)
        #expect(ran)
        #expect(try store.states()["library"]?.level == "2.0-1")
    }

    @Test func reopeningReadsTheSameStates() throws {
        try applyInitialSchema(to: store)
        #expect(try store.apply(sqliteStep("3", manager: "search") { _ in }).isApplied)
        try store.updateRecord(of: "library") { $0.appVersion = "2.0" }
        try store.updateRecord(of: "thumbnails") { $0.setBaseline("1.2.5") }
        let states = try store.states()
        #expect(states == [
            "library": LevelState(level: "1.0", appVersion: "2.0"),
            "search": LevelState(level: 3),
            "thumbnails": LevelState(level: "1.2.5"),
        ])
        #expect(try SQLiteStore(url: url).states() == states)

        try store.updateRecord(of: "library") { $0 = MigrationRecord(appVersion: $0.appVersion) }
        #expect(try SQLiteStore(url: url).states()["library"] == LevelState(appVersion: "2.0"))
    }

    @Test func levelThatIsNotAVersionIsUnreadableNotEmpty() throws {
        try store.updateRecord(of: "library") { $0.setBaseline("1.0") }
        let other = try scratch.openDatabase("library.sqlite")
        try other.execute("UPDATE store_migrations_levels SET level = '1.0beta'")
        let error = try #require(#expect(throws: MigrationError.self) { _ = try store.readRecords() })
        guard case let .unreadableState(manager, _, reason) = error else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(manager == "library")
        #expect(reason.contains("1.0beta"))
    }

    // MARK: Concurrency

    @Test func lockHeldPastTheBusyTimeoutIsATypedBusyError() throws {
        let store = SQLiteStore(url: url, busyTimeout: 0.2)
        try applyInitialSchema(to: store)
        let other = try scratch.openDatabase("library.sqlite", busyTimeout: 0)
        try other.execute("BEGIN IMMEDIATE")

        let start = Date()
        let error = try #require(#expect(throws: SQLiteError.self) {
            _ = try store.apply(sqliteStep("1.1") { _ in Issue.record("the body must not run") })
        })
        #expect(error.isBusy)
        #expect(error.sql == "BEGIN IMMEDIATE")
        #expect(error.description.contains("busy timeout"))
        #expect(Date().timeIntervalSince(start) >= 0.19)
        #expect(throws: SQLiteError.self) { try store.updateRecord(of: "library") { $0.appVersion = "1.1" } }
        #expect(try store.states()["library"]?.level == "1.0", "WAL readers are not blocked")

        try other.execute("ROLLBACK")
        #expect(try store.apply(sqliteStep("1.1") { _ in }).isApplied)
    }

    @Test func readStatesFromAnotherThreadWaitsForTheStepInProgress() throws {
        let bodyStarted = DispatchSemaphore(value: 0)
        let finished = DispatchGroup()
        let store = self.store
        DispatchQueue.global().async(group: finished) {
            _ = try? store.apply(sqliteStep("1.0") { db in
                bodyStarted.signal()
                Thread.sleep(forTimeInterval: 0.1)
                try db.execute("CREATE TABLE t(x)")
            })
        }
        bodyStarted.wait()
        #expect(try store.states()["library"]?.level == "1.0")
        finished.wait()
    }

    @Test func readIsReadOnly() throws {
        try applyInitialSchema(to: store)
        let error = try #require(#expect(throws: SQLiteError.self) {
            try store.read { db in try db.execute("DELETE FROM event") }
        })
        #expect(error.code == SQLITE_READONLY)
        #expect(try store.read { try $0.scalar("SELECT count(*) FROM event", as: Int.self) } == 20)
        #expect(try store.apply(sqliteStep("1.1") { db in try db.execute("DELETE FROM event WHERE id = 1") }).isApplied)
        #expect(try store.read { try $0.scalar("SELECT count(*) FROM event", as: Int.self) } == 19)
    }

    @Test func callingTheStoreFromItsOwnBodyFailsInsteadOfDeadlocking() throws {
        let store = self.store
        let error = try #require(#expect(throws: SQLiteError.self) {
            _ = try store.apply(sqliteStep("1.0") { _ in
                _ = try store.apply(sqliteStep("1.1") { _ in })
            })
        })
        #expect(error.code == SQLITE_MISUSE)
        #expect(try store.readRecords().isEmpty)
    }
}

@Suite struct SQLiteStoreWriteTests {
    @Test func writeCommitsWithoutTouchingLevels() throws {
        let scratch = try TemporaryFolder()
        let store = SQLiteStore(url: scratch.url.appendingPathComponent("app.sqlite"))
        try store.write { db in
            try db.execute("CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT)")
            try db.execute("INSERT INTO note(title) VALUES (?)", arguments: ["Welcome"])
        }
        #expect(try store.readRecords().isEmpty)
        #expect(try store.read { db in try db.tableExists("store_migrations_levels") } == false)
        #expect(try store.read { db in try db.scalar("SELECT title FROM note", as: String.self) } == "Welcome")
    }

    @Test func writeRollsBackWhenTheBodyThrows() throws {
        let scratch = try TemporaryFolder()
        let store = SQLiteStore(url: scratch.url.appendingPathComponent("app.sqlite"))
        try store.write { db in try db.execute("CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT)") }
        #expect(throws: TestFailure.self) {
            try store.write { db in
                try db.execute("INSERT INTO note(title) VALUES ('half')")
                throw TestFailure(message: "stop")
            }
        }
        #expect(try store.read { db in try db.scalar("SELECT count(*) FROM note", as: Int.self) } == 0)
    }
}
