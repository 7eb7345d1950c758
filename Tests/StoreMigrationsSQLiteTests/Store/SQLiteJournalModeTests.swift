import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// Which journal mode a step leaves a database in: WAL for good by default, or the database's
/// own with `journalMode: .keep`. Bytes 18 and 19 of the header are 1 for a rollback journal and
/// 2 for WAL.
@Suite struct SQLiteJournalModeTests {
    let scratch: TemporaryFolder
    let url: URL

    init() throws {
        scratch = try TemporaryFolder()
        url = scratch.file("notes.sqlite")
    }

    /// A database the app's own code kept in rollback-journal mode, with a row in it.
    func makeRollbackJournalDatabase() throws {
        try RawSQLite.execute(
            """
            PRAGMA journal_mode = DELETE;
            CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT);
            INSERT INTO note(title) VALUES ('legacy');
            """, at: url.path)
        #expect(try RawSQLite.journalModeBytes(of: url.path) == [1, 1])
    }

    /// Runs one step adding a column through `store`, which then reads `journalMode`, and closes it.
    func migrate(_ store: SQLiteStore, leaving journalMode: String) throws {
        let coordinator = MigrationCoordinator(appVersion: "1")
        try coordinator.manager("notes", store: store).register("1") { db in
            try db.execute("CREATE TABLE IF NOT EXISTS note(id INTEGER PRIMARY KEY, title TEXT)")
            try db.execute("ALTER TABLE note ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0")
        }
        try coordinator.run()
        #expect(try store.read { try $0.scalar("PRAGMA journal_mode", as: String.self) } == journalMode)
        store.close()
    }

    @Test func byDefaultAStepSwitchesTheDatabaseToWALForGood() throws {
        try makeRollbackJournalDatabase()
        let store = SQLiteStore(url: url)
        #expect(store.journalMode == .wal)
        try migrate(store, leaving: "wal")
        #expect(try RawSQLite.journalModeBytes(of: url.path) == [2, 2])
        #expect(try RawSQLite.strings("PRAGMA journal_mode", at: url.path) == ["wal"])
    }

    @Test func keepLeavesARollbackJournalDatabaseInItsMode() throws {
        try makeRollbackJournalDatabase()
        try migrate(SQLiteStore(url: url, journalMode: .keep), leaving: "delete")
        #expect(try RawSQLite.journalModeBytes(of: url.path) == [1, 1])
        #expect(try RawSQLite.strings("SELECT title || ',' || pinned FROM note", at: url.path) == ["legacy,0"])
        #expect(try scratch.names() == ["notes.sqlite"])
    }

    @Test func keepLeavesAWALDatabaseInWAL() throws {
        try RawSQLite.execute("PRAGMA journal_mode = WAL; CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT)", at: url.path)
        try migrate(SQLiteStore(url: url, journalMode: .keep), leaving: "wal")
        #expect(try RawSQLite.journalModeBytes(of: url.path) == [2, 2])
    }

    @Test(arguments: [SQLiteStore.JournalMode.wal, .keep])
    func aNewDatabaseIsCreatedInTheStoresJournalMode(mode: SQLiteStore.JournalMode) throws {
        try migrate(SQLiteStore(url: url, journalMode: mode), leaving: mode == .wal ? "wal" : "delete")
        #expect(try RawSQLite.journalModeBytes(of: url.path) == (mode == .wal ? [2, 2] : [1, 1]))
        #expect(try RawSQLite.strings("SELECT level FROM store_migrations_levels", at: url.path) == ["1"])
    }
}
