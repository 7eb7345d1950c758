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

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// `coordinator.plan()` reads only: for every file-backed store kind, a missing store stays
/// missing (no folder, no lock file, no database), an existing one keeps every byte, mode and
/// inode of its folder, and a SQLite database in rollback-journal mode stays in it. `run()` then
/// creates what it needs.
@Suite struct ReadOnlyPlanningTests {
    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder()
    }

    var root: URL { folder.url }

    /// A coordinator at `appVersion` with manager "m" on a fresh store object of `kind`,
    /// registering 1.0 and 1.1, and an app-version hook that must not run while planning.
    func coordinator(_ kind: FileStoreKind, _ appVersion: Version, bodies: BodyCounter, hooks: BodyCounter) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: appVersion)
        let manager = try kind.addManager("m", to: coordinator, root: root, versions: ["1.0", "1.1"], bodies: bodies)
        manager.onAppVersionChange { _, current in hooks.count("hook@\(current)") }
        return coordinator
    }

    @Test(arguments: FileStoreKind.allCases)
    func planningAMissingStoreCreatesNothing(kind: FileStoreKind) throws {
        let bodies = BodyCounter(), hooks = BodyCounter()
        // The store's folder does not exist; its parent does (and is empty).
        let before = try FolderSnapshot(root)
        #expect(before.paths == ["."])

        let plan = try coordinator(kind, "1.1", bodies: bodies, hooks: hooks).plan()
        #expect(plan.managers.map(\.pending) == [["1.0", "1.1"]])
        #expect(plan.managers.first?.firstLaunch == .runAll)
        #expect(plan.steps.map(\.id.description) == ["m@1.0", "m@1.1", "m:appVersionChange@1.1"])
        let after = try FolderSnapshot(root)
        #expect(after == before, "planning changed: \(after.changes(since: before))")
        #expect(bodies.total == 0 && hooks.total == 0)

        do {
            // Planning twice, and through a store object that already planned, is as harmless.
            let reused = try coordinator(kind, "1.1", bodies: bodies, hooks: hooks)
            _ = try reused.plan()
            _ = try reused.plan()
            #expect(try FolderSnapshot(root) == before)

            // Running creates what the store needs.
            try reused.run()
        }
        settleDatabases(below: root)
        #expect(bodies.counts == ["m@1.0": 1, "m@1.1": 1])
        #expect(hooks.counts == ["hook@1.1": 1])
        #expect(try kind.onDiskRuns(root: root) == ["1.0": 1, "1.1": 1])
        let created = try FolderSnapshot(root).paths
        for path in kind.pathsCreatedByRunning {
            #expect(created.contains(path), "\(path) is missing after the run: \(created)")
        }
    }

    @Test(arguments: FileStoreKind.allCases)
    func planningAMissingStoreInAnExistingFolderCreatesNothing(kind: FileStoreKind) throws {
        try FileManager.default.createDirectory(at: kind.folder(in: root), withIntermediateDirectories: true)
        let before = try FolderSnapshot(root)
        #expect(before.paths == [".", "store"])
        let bodies = BodyCounter(), hooks = BodyCounter()
        let plan = try coordinator(kind, "1.1", bodies: bodies, hooks: hooks).plan()
        #expect(plan.managers.map(\.pending) == [["1.0", "1.1"]])
        #expect(try FolderSnapshot(root) == before, "no file, no lock file, no database")
    }

    @Test(arguments: FileStoreKind.allCases)
    func planningAnExistingStoreWithPendingMigrationsChangesNoByteNorMode(kind: FileStoreKind) throws {
        let bodies = BodyCounter(), hooks = BodyCounter()
        // Version 1.0 of the app migrated the store (1.1 was ahead then).
        try coordinator(kind, "1.0", bodies: bodies, hooks: hooks).run()
        settleDatabases(below: root)
        #expect(bodies.counts == ["m@1.0": 1])
        // Unusual modes too, so that a rewrite that reset them would be seen.
        try kind.makeModesUnusual(root: root)
        let before = try FolderSnapshot(root)

        let plan = try coordinator(kind, "1.1", bodies: bodies, hooks: hooks).plan()
        #expect(plan.managers.map(\.level) == ["1.0"])
        #expect(plan.managers.map(\.pending) == [["1.1"]])
        #expect(plan.steps.map(\.id.description) == ["m@1.1", "m:appVersionChange@1.1"])
        let after = try FolderSnapshot(root)
        #expect(after == before, "planning changed: \(after.changes(since: before))")
        #expect(bodies.counts == ["m@1.0": 1] && hooks.counts == ["hook@1.0": 1])

        try coordinator(kind, "1.1", bodies: bodies, hooks: hooks).run()
        settleDatabases(below: root)
        #expect(bodies.counts == ["m@1.0": 1, "m@1.1": 1])
        #expect(try kind.onDiskRuns(root: root) == ["1.0": 1, "1.1": 1])
        #expect(try FolderSnapshot(root) != before)
    }

    /// A database another program keeps in rollback-journal mode: planning neither switches it
    /// to WAL (bytes 18 and 19 of the header stay 1) nor leaves `-wal` or `-shm` files, with or
    /// without the store's tables in it.
    @Test func planningLeavesARollbackJournalDatabaseInItsJournalMode() throws {
        let kind = FileStoreKind.sqlite
        let database = kind.storeURL(in: root)
        try FileManager.default.createDirectory(at: kind.folder(in: root), withIntermediateDirectories: true)
        // Written through SQLite's C API, as the app's own code wrote it before adopting the library.
        try RawSQLite.execute(
            """
            PRAGMA journal_mode = DELETE;
            CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT);
            INSERT INTO note(title) VALUES ('legacy');
            """, at: database.path)
        #expect(try RawSQLite.journalModeBytes(of: database.path) == [1, 1])
        let bodies = BodyCounter(), hooks = BodyCounter()

        // No store tables yet: a first launch.
        var before = try FolderSnapshot(root)
        var plan = try coordinator(kind, "1.0", bodies: bodies, hooks: hooks).plan()
        #expect(plan.managers.first?.firstLaunch == .runAll)
        var after = try FolderSnapshot(root)
        #expect(after == before, "planning changed: \(after.changes(since: before))")
        #expect(try RawSQLite.journalModeBytes(of: database.path) == [1, 1])
        #expect(try RawSQLite.strings("SELECT name FROM sqlite_master WHERE name LIKE 'store_migrations%'", at: database.path) == [])

        // The store's tables and a record, written by a run; the app then switches back.
        try coordinator(kind, "1.0", bodies: bodies, hooks: hooks).run()
        settleDatabases(below: root)
        try RawSQLite.execute("PRAGMA journal_mode = DELETE", at: database.path)
        #expect(try RawSQLite.journalModeBytes(of: database.path) == [1, 1])
        try kind.makeModesUnusual(root: root)
        before = try FolderSnapshot(root)
        plan = try coordinator(kind, "1.1", bodies: bodies, hooks: hooks).plan()
        #expect(plan.managers.map(\.level) == ["1.0"] && plan.managers.map(\.pending) == [["1.1"]])
        after = try FolderSnapshot(root)
        #expect(after == before, "planning changed: \(after.changes(since: before))")
        #expect(try RawSQLite.journalModeBytes(of: database.path) == [1, 1])
        #expect(!after.paths.contains { $0.hasSuffix("-wal") || $0.hasSuffix("-shm") || $0.hasSuffix("-journal") })

        // Running migrates, in WAL mode as the store does.
        try coordinator(kind, "1.1", bodies: bodies, hooks: hooks).run()
        settleDatabases(below: root)
        #expect(bodies.counts == ["m@1.0": 1, "m@1.1": 1])
        #expect(try RawSQLite.journalModeBytes(of: database.path) == [2, 2])
        #expect(try RawSQLite.strings("SELECT title FROM note", at: database.path) == ["legacy"])
    }
}
