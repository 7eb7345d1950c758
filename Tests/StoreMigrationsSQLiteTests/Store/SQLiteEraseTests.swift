import Foundation
import Testing
import StoreMigrations
import StoreMigrationsSQLite
import TestSupport

/// Development mode on a SQLite database: an edited migration empties the file in place (tables,
/// indexes, views, triggers and the record tables gone) and the replay builds it again.
@Suite struct SQLiteEraseTests {
    private func launch(_ url: URL, column: String) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: "1.1")
        coordinator.developmentMode = .eraseOnFingerprintChange
        let library = try coordinator.manager("library", store: SQLiteStore(url: url))
        let create = "CREATE TABLE note (id INTEGER PRIMARY KEY, \(column) TEXT)"
        library.register("1.0", options: .named("create notes", fingerprint: create)) { db in
            try db.execute(create)
            try db.execute("INSERT INTO note (\(column)) VALUES ('written by the \(column) body')")
        }
        library.register("1.1") { db in
            try db.execute("CREATE TABLE tag (id INTEGER PRIMARY KEY, note_id INTEGER REFERENCES note(id))")
            try db.execute("CREATE INDEX tag_on_note ON tag (note_id)")
        }
        return coordinator
    }

    /// Read without switching the database to WAL, which would let a reader not block a commit.
    private func schema(_ url: URL) throws -> [String] {
        let store = SQLiteStore(url: url, journalMode: .keep)
        defer { store.close() }
        return try store.read { db in
            try db.rows("SELECT type || ' ' || name AS object FROM sqlite_master WHERE name NOT LIKE 'sqlite%' ORDER BY type, name").map { try $0["object"] }
        }
    }

    @Test func anEditedMigrationEmptiesTheDatabaseAndTheReplayRebuildsIt() throws {
        let scratch = try TemporaryFolder()
        let url = scratch.file("library.sqlite")
        try launch(url, column: "title").run()
        // What the app added beside the migrations: gone with the rest.
        let app = SQLiteStore(url: url)
        try app.write { db in
            try db.execute("CREATE TABLE draft (id INTEGER PRIMARY KEY AUTOINCREMENT, note_id INTEGER REFERENCES note(id))")
            try db.execute("INSERT INTO draft (note_id) VALUES (1)")
            try db.execute("CREATE VIEW titles AS SELECT title FROM note")
            try db.execute("CREATE TRIGGER note_deleted AFTER DELETE ON note BEGIN DELETE FROM draft; END")
            try db.execute("PRAGMA user_version = 7")
        }

        let coordinator = try launch(url, column: "body")
        #expect(try coordinator.plan().managers[0].developmentErase?.map(\.migration.version) == ["1.0"])
        #expect(try schema(url).contains("view titles"), "planning erases nothing")
        try coordinator.run()

        let rebuilt = try schema(url)
        #expect(rebuilt == [
            "index tag_on_note", "table note", "table store_migrations_history", "table store_migrations_levels", "table tag",
        ])
        try app.read { db in
            let columns: [String] = try db.rows("SELECT name FROM pragma_table_info('note')").map { try $0["name"] }
            #expect(columns == ["id", "body"])
            #expect(try db.scalar("SELECT body FROM note", as: String.self) == "written by the body body")
            #expect(try db.scalar("PRAGMA user_version", as: Int.self) == 0)
            // SQLite keeps the table of AUTOINCREMENT counters, without the dropped table's row.
            #expect(try db.scalar("SELECT count(*) FROM sqlite_sequence", as: Int.self) == 0)
            #expect(try db.scalar("SELECT count(*) FROM store_migrations_history", as: Int.self) == 2)
        }
        app.close()
        #expect(try coordinator.plan().isUpToDate)
    }

    /// An erase whose commit cannot happen (a reader holds the rollback journal's shared lock
    /// past the busy timeout) rolls back whole: the schema, the data and the records stay.
    @Test func anEraseThatCannotCommitLeavesTheDatabaseAsItWas() throws {
        let scratch = try TemporaryFolder()
        let url = scratch.file("library.sqlite")
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        let library = try coordinator.manager("library", store: SQLiteStore(url: url, journalMode: .keep))
        library.register("1.0") { db in
            try db.execute("CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT)")
            try db.execute("INSERT INTO note (title) VALUES ('kept')")
        }
        try coordinator.run()
        let before = try schema(url)
        let eraser = SQLiteStore(url: url, busyTimeout: 0.2, journalMode: .keep)
        let reader = SQLiteStore(url: url, journalMode: .keep)
        let error = try reader.read { db -> SQLiteError? in
            _ = try db.scalar("SELECT count(*) FROM note", as: Int.self)
            return #expect(throws: SQLiteError.self) { try eraser.erase(TransactionRequest()) }
        }
        #expect(error?.isBusy == true)
        eraser.close()
        reader.close()
        #expect(try schema(url) == before)
        #expect(try library.record().level == "1.0")
        let title = try SQLiteStore(url: url, journalMode: .keep).read { db in try db.scalar("SELECT title FROM note", as: String.self) }
        #expect(title == "kept")
    }

    /// The same blocked commit in a run: a typed error naming the store and the edited migration,
    /// and nothing migrated.
    @Test func aRunWhoseEraseFailsSaysWhichStoreAndWhy() throws {
        let scratch = try TemporaryFolder()
        let url = scratch.file("library.sqlite")
        func launch(_ create: String) throws -> MigrationCoordinator {
            let coordinator = MigrationCoordinator(appVersion: "1.0")
            coordinator.developmentMode = .eraseOnFingerprintChange
            let library = try coordinator.manager("library", store: SQLiteStore(url: url, busyTimeout: 0.2, journalMode: .keep))
            library.register("1.0", options: .named("create notes", fingerprint: create)) { db in try db.execute(create) }
            return coordinator
        }
        try launch("CREATE TABLE note (id INTEGER PRIMARY KEY)").run()
        let before = try schema(url)
        let coordinator = try launch("CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT)")
        let reader = SQLiteStore(url: url, journalMode: .keep)
        let error = try reader.read { db -> DevelopmentModeError? in
            _ = try db.scalar("SELECT count(*) FROM note", as: Int.self)
            return #expect(throws: DevelopmentModeError.self) { try coordinator.run() }
        }
        reader.close()
        guard case .eraseFailed(let store, let change, let reason) = error else {
            Issue.record("expected eraseFailed, got \(String(describing: error))")
            return
        }
        #expect(store == SQLiteStore(url: url).description)
        #expect(change.migration.description == "library@1.0")
        #expect(reason.contains("SQLITE_BUSY"))
        #expect(error?.description.hasSuffix("Nothing was migrated; the store is as it was or empty. "
            + "Close what else holds the store, then launch again.") == true)
        #expect(try schema(url) == before)
    }

    @Test func anUneditedDatabaseKeepsItsData() throws {
        let scratch = try TemporaryFolder()
        let url = scratch.file("library.sqlite")
        try launch(url, column: "title").run()
        let before = try schema(url)
        try launch(url, column: "title").run()
        #expect(try schema(url) == before)
    }
}
