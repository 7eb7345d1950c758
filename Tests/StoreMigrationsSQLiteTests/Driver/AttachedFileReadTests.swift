import Foundation
import Testing
import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// A fleet's walk thread reads its SQLite tenants' records through one connection it keeps,
/// each tenant's file attached `immutable` in turn: the same records and the same errors as the
/// store's own read, under the same lock and checks, writing nothing, on one connection for
/// all the thread's tenants.
@Suite struct AttachedFileReadTests {
    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder()
    }

    /// A database at `name` whose `library` ran 1.0, 1.1 (named, with a fingerprint) and 2.0, and
    /// whose `settings` has only a baseline at 3, in `journalMode`; the store closed, so that no
    /// `-wal` stays beside it.
    func tenant(_ name: String, journalMode: SQLiteStore.JournalMode = .wal) throws -> URL {
        let url = folder.file(name)
        let store = SQLiteStore(url: url, journalMode: journalMode)
        defer { store.close() }
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let library = try coordinator.manager("library", store: store)
        library.register("1.0") { db in try db.execute("CREATE TABLE note(id integer PRIMARY KEY, title text)") }
        library.register("1.1", options: .named("add body", fingerprint: "body v1")) { db in
            try db.execute("ALTER TABLE note ADD COLUMN body text")
        }
        library.register("2.0") { db in try db.execute("INSERT INTO note(title) VALUES ('hello')") }
        _ = try coordinator.run()
        #expect(try coordinator.manager("settings", store: store).baseline(at: "3"))
        return url
    }

    @Test func readsTheSameRecordsAsTheStoresOwnRead() throws {
        let resources = WorkerResources()
        for (name, mode) in [("wal.sqlite", SQLiteStore.JournalMode.wal), ("rollback.sqlite", .keep)] {
            let url = try tenant(name, journalMode: mode)
            let store = SQLiteStore(url: url)
            let attached = try store.readRecords(reusing: resources)
            #expect(attached == (try store.readRecords()), "\(name)")
            #expect(attached["library"]?.appliedVersions == ["1.0", "1.1", "2.0"])
            #expect(attached["library"]?.applied.map(\.name) == [nil, "add body", nil])
            #expect(attached["settings"]?.level == "3")
            #expect(attached["settings"]?.appliedVersions == [])
        }
        // Both read through the one connection: neither fell back to a read of its own.
        #expect(try resources.resource { try AttachedFileRead() }.attachedFiles == 2)
    }

    @Test func aDatabaseWithoutRecordsOrWithoutAFileHasNone() throws {
        let resources = WorkerResources()
        let url = folder.file("bare.sqlite")
        do {
            let db = try Database(path: url.path, busyTimeout: 0, mode: .migrating(switchingToWAL: true))
            try db.execute("CREATE TABLE note(id integer PRIMARY KEY)")
        }
        #expect(try SQLiteStore(url: url).readRecords(reusing: resources) == [:])
        let missing = folder.file("missing.sqlite")
        #expect(try SQLiteStore(url: missing).readRecords(reusing: resources) == [:])
        #expect(!FileManager.default.fileExists(atPath: missing.path))
        #expect(try folder.names() == ["bare.sqlite"])
    }

    /// Tables an older release wrote (no history, no `baseline` column) are read the ordinary
    /// way: the questions asked of them would be asked of the kept connection's own database.
    @Test func tablesOfAnOlderReleaseAreReadAsTheStoreReadsThem() throws {
        let url = folder.file("old.sqlite")
        let db = try Database(path: url.path, busyTimeout: 0, mode: .migrating(switchingToWAL: false))
        try db.execute("""
            CREATE TABLE store_migrations_levels(manager TEXT PRIMARY KEY NOT NULL, level TEXT, app_version TEXT);
            INSERT INTO store_migrations_levels VALUES ('library', '1.2', '3.0')
            """)
        let store = SQLiteStore(url: url)
        let attached = try store.readRecords(reusing: WorkerResources())
        #expect(attached == ["library": MigrationRecord(baseline: "1.2", appVersion: "3.0")])
        #expect(attached == (try store.readRecords()))
    }

    @Test func aFileThatIsNotADatabaseThrowsTheStoresOwnError() throws {
        let url = folder.file("damaged.sqlite")
        try Data(repeating: UInt8(ascii: "x"), count: 4096).write(to: url)
        let store = SQLiteStore(url: url)
        let resources = WorkerResources()
        let own = #expect(throws: SQLiteError.self) { try store.readRecords() }
        let attached = #expect(throws: SQLiteError.self) { try store.readRecords(reusing: resources) }
        #expect(attached.map { "\($0)" } == own.map { "\($0)" })
        #expect(attached.map { "\($0)" }?.contains(url.path) == true)

        // Through a fleet, the failure names the tenant and the store.
        let fleet = MigrationFleet(appVersion: "1.0", tenants: SQLiteTenantFolder(folder: folder.url)) { tenant, coordinator in
            try coordinator.manager("library", store: SQLiteStore(url: tenant.url!)).register("1.0") { _ in }
        }
        let plan = try fleet.plan()
        #expect(plan.failed == 1)
        let failure = "\(plan.failures)"
        #expect(failure.contains("damaged"), "\(failure)")
        #expect(failure.contains(own.map { "\($0)" } ?? "?"), "\(failure)")
    }

    @Test func aFileWithAWALOrAJournalBesideItOrAWriterHoldingItIsNotReadAttached() throws {
        let url = try tenant("busy.sqlite", journalMode: .keep)
        let session = try AttachedFileRead()
        #expect(session.read(path: url.path) { _ in true } == true)

        let writer = try Database(path: url.path, busyTimeout: 0, mode: .migrating(switchingToWAL: false))
        try writer.execute("BEGIN EXCLUSIVE")
        #expect(session.read(path: url.path) { _ in true } == nil, "a writer about to commit")
        try writer.execute("ROLLBACK")

        for sideFile in ["-journal", "-wal"] {
            try Data().write(to: URL(fileURLWithPath: url.path + sideFile))
            #expect(session.read(path: url.path) { _ in true } == nil, "\(sideFile)")
            try FileManager.default.removeItem(atPath: url.path + sideFile)
        }
        let appeared = session.read(path: url.path) { _ in
            FileManager.default.createFile(atPath: url.path + "-wal", contents: Data())
        }
        #expect(appeared == nil, "a -wal that appeared during the read")
        try FileManager.default.removeItem(atPath: url.path + "-wal")
        #expect(session.read(path: url.path) { _ in true } == true, "the connection reads on after a refusal")
    }

    @Test func aWALWritersCommitsAreReadTheOrdinaryWay() throws {
        let url = try tenant("acme.sqlite")
        let writer = SQLiteStore(url: url)
        defer { writer.close() }
        let coordinator = MigrationCoordinator(appVersion: "2.1")
        let library = try coordinator.manager("library", store: writer)
        for version: Version in ["1.0", "1.1", "2.0"] { library.register(version) { _ in } }
        library.register("2.1") { db in try db.execute("DELETE FROM note") }
        _ = try coordinator.run()
        #expect(FileManager.default.fileExists(atPath: url.path + "-wal"))

        // 2.1 is committed only in the -wal, which the attached read refuses to read past.
        #expect(try SQLiteStore(url: url).readRecords(reusing: WorkerResources())["library"]?.level == "2.1")
    }

    /// `ATTACH` reads the file's schema before the read takes its lock: a schema changed in
    /// between (here two tables' names swapped) is read again under the lock, never taken from
    /// what `ATTACH` read.
    @Test func whatChangedBetweenTheAttachAndTheLockIsReadFromTheFile() throws {
        let url = folder.file("swapped.sqlite")
        let db = try Database(path: url.path, busyTimeout: 0, mode: .migrating(switchingToWAL: false))
        try db.execute("CREATE TABLE a(x); CREATE TABLE b(x); INSERT INTO a VALUES ('in a'); INSERT INTO b VALUES ('in b')")
        let session = try AttachedFileRead()
        #expect(session.attach(url.path))
        try db.execute("ALTER TABLE a RENAME TO c; ALTER TABLE b RENAME TO a; ALTER TABLE c RENAME TO b")
        let read = session.readAttached(path: url.path) { try $0.scalar("SELECT x FROM a", as: String.self) }
        session.detach()
        #expect(read == "in b")
    }

    @Test func theReadWritesNothing() throws {
        let url = try tenant("quiet.sqlite")
        let before = try Data(contentsOf: url)
        let modified = try FileManager.default.attributesOfItem(atPath: url.path)[.modificationDate] as? Date
        let resources = WorkerResources()
        #expect(try SQLiteStore(url: url).readRecords(reusing: resources)["library"]?.level == "2.0")
        #expect(try resources.resource { try AttachedFileRead() }.attachedFiles == 1)
        #expect(try folder.names() == ["quiet.sqlite"], "no -wal, -shm or -journal")
        #expect(try Data(contentsOf: url) == before)
        #expect(try FileManager.default.attributesOfItem(atPath: url.path)[.modificationDate] as? Date == modified)
    }

    @Test func oneConnectionReadsEveryTenantOfAThreadAndClosesWithItsResources() throws {
        let urls = try (0..<3).map { try tenant("tenant \($0).sqlite") }
        let resources = WorkerResources()
        for url in urls { #expect(try SQLiteStore(url: url).readRecords(reusing: resources)["library"]?.level == "2.0") }
        #expect(resources.count == 1)
        weak let session = try resources.resource { try AttachedFileRead() }
        #expect(session?.attachedFiles == 3)
        resources.removeAll()
        #expect(session == nil)
        #expect(resources.count == 0)
    }
}
