import Foundation
import Testing
import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// The fleet's up-to-date check of SQLite tenants reads a file as it is on disk only when no
/// connection is writing it: a tenant whose committed steps are still in its `-wal`, or whose
/// file holds a crashed transaction's pages with its hot `-journal` beside it, is read as SQLite
/// reads it, never as up to date when it is not; and a file being written is never read as it
/// is on disk.
@Suite struct SQLiteFleetCheckTests {
    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder()
    }

    /// A fleet of the `*.sqlite` files of the folder at `appVersion`: `library` 1.0 creates
    /// `note`, 2.0 adds `pinned`, in `journalMode`.
    func fleet(_ appVersion: Version, journalMode: SQLiteStore.JournalMode = .wal) -> MigrationFleet {
        MigrationFleet(appVersion: appVersion, tenants: SQLiteTenantFolder(folder: folder.url)) { tenant, coordinator in
            let library = try coordinator.manager("library", store: SQLiteStore(url: tenant.url!, journalMode: journalMode))
            library.register("1.0") { db in try db.execute("CREATE TABLE note(id integer PRIMARY KEY, title text, body blob)") }
            if appVersion >= "2.0" {
                library.register("2.0") { db in try db.execute("ALTER TABLE note ADD COLUMN pinned integer NOT NULL DEFAULT 0") }
            }
        }
    }

    /// The level of `library` in the file at `url` as an `immutable` connection reads it: the
    /// file's bytes alone.
    func levelOnDisk(_ url: URL) throws -> String? {
        let db = try Database(path: url.path, busyTimeout: 0, mode: .immutable)
        return try db.scalar("SELECT level FROM store_migrations_levels WHERE manager = 'library'", as: String.self)
    }

    @Test func aTenantWhoseStepsAreStillInItsWALIsUpToDate() throws {
        // One tenant at 1.0, then migrated to 2.0 by a store that stays open, its commit in the -wal.
        let url = folder.file("acme.sqlite")
        let first = MigrationCoordinator(appVersion: "1.0")
        let firstStore = SQLiteStore(url: url)
        try first.manager("library", store: firstStore).register("1.0") { db in
            try db.execute("CREATE TABLE note(id integer PRIMARY KEY, title text, body blob)")
        }
        _ = try first.run()
        firstStore.close()
        let writer = SQLiteStore(url: url)
        defer { writer.close() }
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let library = try coordinator.manager("library", store: writer)
        library.register("1.0") { _ in }
        library.register("2.0") { db in try db.execute("ALTER TABLE note ADD COLUMN pinned integer NOT NULL DEFAULT 0") }
        #expect(try coordinator.run().steps.map(\.outcome) == [.applied])
        #expect(FileManager.default.fileExists(atPath: url.path + "-wal"))
        #expect(try levelOnDisk(url) == "1.0", "the file alone still says 1.0: 2.0 is committed in the -wal")

        let plan = try fleet("2.0").plan()
        #expect(plan.isUpToDate && plan.upToDate == 1, "\(plan)")
        #expect(plan.levels.map(\.description) == ["library 2.0: 1 tenant (acme)"])
    }

    @Test func aTenantWithAHotJournalIsReadRolledBack() throws {
        let url = folder.file("globex.sqlite")
        let first = MigrationCoordinator(appVersion: "1.0")
        try first.manager("library", store: SQLiteStore(url: url, journalMode: .keep)).register("1.0") { db in
            try db.execute("CREATE TABLE note(id integer PRIMARY KEY, title text, body blob)")
        }
        _ = try first.run()
        // A transaction that records 2.0 and writes enough to spill its pages into the file, and
        // the file and its journal copied while it is open: a process killed mid-commit.
        let crashed = folder.file("initech.sqlite")
        do {
            let db = try Database(path: url.path, busyTimeout: 5, mode: .migrating(switchingToWAL: false))
            try db.execute("PRAGMA cache_size = 10")
            try db.execute("BEGIN IMMEDIATE")
            try db.execute("UPDATE store_migrations_levels SET level = '2.0' WHERE manager = 'library'")
            try db.execute("""
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500)
                INSERT INTO note(title, body) SELECT 'n', randomblob(2000) FROM n
                """)
            try FileManager.default.copyItem(at: url, to: crashed)
            try FileManager.default.copyItem(atPath: url.path + "-journal", toPath: crashed.path + "-journal")
            try db.execute("ROLLBACK")
        }
        try FileManager.default.removeItem(at: url)
        #expect(try levelOnDisk(crashed) == "2.0", "the file alone holds the crashed transaction's level")

        let plan = try fleet("2.0", journalMode: .keep).plan()
        #expect(!plan.isUpToDate && plan.upToDate == 0)
        #expect(plan.pending.map(\.description) == ["1 tenant: library@2.0 (initech)"])
        #expect(plan.levels.map(\.description) == ["library 1.0: 1 tenant (initech)"])
    }

    @Test func aFileBeingWrittenIsNeverReadAsItIsOnDisk() throws {
        let url = folder.file("odd name ?#%.sqlite")
        let create = MigrationCoordinator(appVersion: "1.0")
        try create.manager("library", store: SQLiteStore(url: url, journalMode: .keep)).register("1.0") { db in
            try db.execute("CREATE TABLE note(id integer PRIMARY KEY, title text, body blob)")
        }
        _ = try create.run()
        let levels = "SELECT level FROM store_migrations_levels"
        #expect(UnchangedFileRead.read(path: url.path, busyTimeout: 0) { try $0.scalar(levels, as: String.self) } == "1.0")

        // A writer about to commit holds the pending lock: no new reader may start.
        let writer = try Database(path: url.path, busyTimeout: 0, mode: .migrating(switchingToWAL: false))
        try writer.execute("BEGIN EXCLUSIVE")
        #expect(UnchangedFileRead.read(path: url.path, busyTimeout: 0) { _ in true } == nil)
        try writer.execute("ROLLBACK")

        for sideFile in ["-journal", "-wal"] {
            try Data().write(to: URL(fileURLWithPath: url.path + sideFile))
            #expect(UnchangedFileRead.read(path: url.path, busyTimeout: 0) { _ in true } == nil, "\(sideFile)")
            try FileManager.default.removeItem(atPath: url.path + sideFile)
        }

        // A -wal that appears during the read (a writer that may have checkpointed into the file)
        // throws the read away.
        let appeared = UnchangedFileRead.read(path: url.path, busyTimeout: 0) { _ in
            FileManager.default.createFile(atPath: url.path + "-wal", contents: Data())
        }
        #expect(appeared == nil)
    }

    /// Every byte of a path but unreserved ones and `/` is percent-encoded, in upper case, so that
    /// SQLite opens the file the path names whatever its name holds.
    @Test func theImmutableURIEncodesEveryReservedByte() throws {
        #expect(UnchangedFileRead.immutableURI("/tenants/acme-1_v2.~x.sqlite") == "file:/tenants/acme-1_v2.~x.sqlite?immutable=1")
        #expect(
            UnchangedFileRead.immutableURI("/a b/?#%&=+\u{7F}é\u{0}z.sqlite")
                == "file:/a%20b/%3F%23%25%26%3D%2B%7F%C3%A9%00z.sqlite?immutable=1")
        #expect(UnchangedFileRead.immutableURI("") == "file:?immutable=1")

        let url = folder.file("tenant ?#%é.sqlite")
        let create = MigrationCoordinator(appVersion: "1.0")
        try create.manager("library", store: SQLiteStore(url: url, journalMode: .keep)).register("1.0") { _ in }
        _ = try create.run()
        #expect(try levelOnDisk(url) == "1.0")
    }
}
