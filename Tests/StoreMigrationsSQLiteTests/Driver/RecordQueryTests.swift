import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// What a manager's record says (`record()`, `appliedMigrations()`, `level()`), as the real
/// stores keep it; hooks that fail record nothing; protected preferences files are refused and
/// replaced files keep their mode.
@Suite struct RecordQueryTests {
    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder()
    }

    var databaseURL: URL { folder.file("library.sqlite") }
    var preferencesURL: URL { folder.file("settings.json") }

    @Test func theRecordOfASQLiteStoreKeepsWhenAndHowLongEachMigrationRan() throws {
        let store = SQLiteStore(url: databaseURL)
        let coordinator = MigrationCoordinator(appVersion: "1.1")
        let library = try coordinator.manager("library", store: store)
        library.register("1.0") { db in try db.execute("CREATE TABLE note(id INTEGER PRIMARY KEY)") }
        library.register("1.1") { db in
            Thread.sleep(forTimeInterval: 0.01)
            try db.execute("INSERT INTO note DEFAULT VALUES")
        }
        #expect(try library.record() == MigrationRecord())
        #expect(try library.level() == nil && library.appliedMigrations() == [])

        let start = Date()
        try coordinator.run()
        let end = Date()

        let record = try library.record()
        #expect(record.appliedVersions == ["1.0", "1.1"])
        #expect(record.baseline == nil && record.level == "1.1")
        // applied_at is stored to the millisecond.
        for migration in record.applied {
            let appliedAt = try #require(migration.appliedAt, "\(migration)")
            #expect(appliedAt >= start.addingTimeInterval(-0.002) && appliedAt <= end, "\(migration) outside \(start)…\(end)")
            let duration = try #require(migration.duration, "\(migration)")
            #expect(duration >= 0 && duration <= end.timeIntervalSince(start))
        }
        #expect(record.applied[0].appliedAt! <= record.applied[1].appliedAt!)
        #expect(record.applied[1].duration! >= 0.01)
        #expect(try library.appliedMigrations() == ["1.0", "1.1"])
        #expect(try library.level() == "1.1")
        // One history row per migration, as the table says.
        #expect(try RawSQLite.rows(
            "SELECT version, applied_at LIKE '____-__-__T__:__:__.___Z' FROM store_migrations_history WHERE manager = 'library' ORDER BY id",
            at: databaseURL.path) == [["1.0", "1"], ["1.1", "1"]])
    }

    @Test func appliedMigrationsIncludeThoseABaselineCovers() throws {
        let coordinator = MigrationCoordinator(appVersion: "1.2")
        let prefs = try coordinator.manager("prefs", store: PreferencesStore(url: preferencesURL))
        for version: Version in ["1.0", "1.1", "1.2"] {
            prefs.register(version) { prefs in try prefs.set(true, for: ["ran", version.description]) }
        }
        #expect(try prefs.baseline(at: "1.1"))
        #expect(try !prefs.baseline(at: "1.2"), "a level exists already")
        try coordinator.run()

        let record = try prefs.record()
        #expect(record.baseline == "1.1")
        #expect(record.appliedVersions == ["1.2"])
        #expect(record.applied.map(\.appliedAt) == [nil] && record.applied.map(\.duration) == [nil], "a file keeps versions only")
        #expect(try prefs.appliedMigrations() == ["1.0", "1.1", "1.2"])
        #expect(try prefs.level() == "1.2")
        #expect(try PreferencesStore(url: preferencesURL).read().dictionary("ran")?.keys.sorted() == ["1.2"])
    }

    /// A hook that throws records nothing: no row for its manager, in a new database and in one
    /// whose levels table holds another manager's row; once it succeeds, one row.
    @Test func aFailingAppVersionHookOnSQLiteLeavesNoStateRow() throws {
        let hooks = BodyCounter()
        func run(failing: Bool, other: Bool = false) throws -> MigrationReport {
            let coordinator = MigrationCoordinator(appVersion: "2.0")
            let settings = try coordinator.manager("settings", store: SQLiteStore(url: databaseURL))
            settings.onAppVersionChange { previous, current in
                hooks.count("hook from \(previous?.description ?? "none")")
                if failing { throw TestFailure(message: "the hook failed") }
            }
            if other {
                try coordinator.manager("other", store: SQLiteStore(url: databaseURL)).register("1.0") { _ in }
            }
            return try runReport(of: coordinator)
        }
        func levelRows() throws -> [[String?]] {
            let tables = try RawSQLite.strings("SELECT name FROM sqlite_master WHERE name = 'store_migrations_levels'", at: databaseURL.path)
            guard !tables.isEmpty else { return [] }
            return try RawSQLite.rows("SELECT manager, level, app_version FROM store_migrations_levels ORDER BY manager", at: databaseURL.path)
        }

        let failed = try run(failing: true)
        #expect(failed.steps.map(\.step.id.description) == ["settings:appVersionChange@2.0"])
        #expect(failed.failures.first?.error as? TestFailure == TestFailure(message: "the hook failed"))
        settleDatabases(below: folder.url)
        #expect(try levelRows() == [])
        // The levels table was created in the transaction the hook's failure rolled back.
        let tableExists = try RawSQLite.strings(
            "SELECT count(*) FROM sqlite_master WHERE name = 'store_migrations_levels'", at: databaseURL.path) == ["1"]
        if tableExists {
            #expect(try RawSQLite.strings("SELECT count(*) FROM store_migrations_levels", at: databaseURL.path) == ["0"])
        }

        // With another manager's row in the table.
        let withOther = try run(failing: true, other: true)
        #expect(withOther.failures.map(\.step.id.description) == ["settings:appVersionChange@2.0"])
        settleDatabases(below: folder.url)
        #expect(try RawSQLite.strings("SELECT count(*) FROM store_migrations_levels", at: databaseURL.path) == ["1"])
        #expect(try levelRows() == [["other", "1.0", nil]])

        #expect(try run(failing: false).succeeded)
        settleDatabases(below: folder.url)
        #expect(try levelRows() == [["other", "1.0", nil], ["settings", nil, "2.0"]])
        #expect(hooks.counts == ["hook from none": 3])
        #expect(try run(failing: false).steps.isEmpty)
    }

    /// Version 1.0 of the app wrote the file; the user then made it read-only.
    func protectedPreferencesFile(mode: mode_t, bodies: BodyCounter) throws -> FolderSnapshot {
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        try coordinator.manager("prefs", store: PreferencesStore(url: preferencesURL)).register("1.0") { prefs in
            bodies.count("prefs@1.0")
            try prefs.set("v1", for: "format")
        }
        try coordinator.run()
        #expect(chmod(preferencesURL.path, mode) == 0)
        return try FolderSnapshot(folder.url)
    }

    @Test(arguments: [0o444, 0o400] as [mode_t])
    func aProtectedPreferencesFileIsRefusedBeforeTheBodyRuns(mode: mode_t) throws {
        let bodies = BodyCounter()
        let before = try protectedPreferencesFile(mode: mode, bodies: bodies)
        let store = PreferencesStore(url: preferencesURL)
        let coordinator = MigrationCoordinator(appVersion: "1.1")
        let prefs = try coordinator.manager("prefs", store: store)
        for version: Version in ["1.0", "1.1"] {
            prefs.register(version) { prefs in
                bodies.count("prefs@\(version)")
                try prefs.set("v2", for: "format")
            }
        }

        let error = #expect(throws: MigrationRunError.self) { try coordinator.run() }
        let failure = try #require(error?.underlyingError as? FileStoreError, "\(String(describing: error))")
        #expect(failure.operation == .checkWritable)
        #expect(failure.path == preferencesURL.path && failure.store == store.description)
        #expect(failure.migration == prefs.migration("1.1"))
        #expect(failure.code == EACCES)
        #expect(bodies.counts == ["prefs@1.0": 1], "the body did not run")
        let after = try FolderSnapshot(folder.url)
        #expect(after == before, "the protected file changed: \(after.changes(since: before))")
        #expect(try prefs.level() == "1.0")
    }

    @Test func replacingAPreferencesFileKeepsItsMode() throws {
        let bodies = BodyCounter()
        _ = try protectedPreferencesFile(mode: 0o640, bodies: bodies)
        var before = stat()
        #expect(stat(preferencesURL.path, &before) == 0)

        let coordinator = MigrationCoordinator(appVersion: "1.1")
        try coordinator.manager("prefs", store: PreferencesStore(url: preferencesURL)).register("1.1") { prefs in
            try prefs.set("v2", for: "format")
        }
        try coordinator.run()

        var after = stat()
        #expect(stat(preferencesURL.path, &after) == 0)
        #expect(after.st_ino != before.st_ino, "the file was replaced")
        #expect(after.st_mode & 0o7777 == 0o640)
        #expect(try PreferencesStore(url: preferencesURL).read().string("format") == "v2")
    }

    @Test(.enabled(if: geteuid() == 0, "only root may give a file to another owner"))
    func replacingAPreferencesFileKeepsItsOwner() throws {
        let bodies = BodyCounter()
        _ = try protectedPreferencesFile(mode: 0o600, bodies: bodies)
        #expect(chown(preferencesURL.path, 4321, 8765) == 0)

        let coordinator = MigrationCoordinator(appVersion: "1.1")
        try coordinator.manager("prefs", store: PreferencesStore(url: preferencesURL)).register("1.1") { prefs in
            try prefs.set("v2", for: "format")
        }
        try coordinator.run()

        var after = stat()
        #expect(stat(preferencesURL.path, &after) == 0)
        #expect(after.st_uid == 4321 && after.st_gid == 8765)
        #expect(after.st_mode & 0o7777 == 0o600)
        #expect(try PreferencesStore(url: preferencesURL).read().string("format") == "v2")
    }
}
