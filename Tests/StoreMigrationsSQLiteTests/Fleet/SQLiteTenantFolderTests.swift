import Foundation
import Testing
import StoreMigrations
import StoreMigrationsSQLite
import TestSupport

/// A folder of SQLite files as a fleet's tenants: which files are tenants, a folder that cannot
/// be read, and a fleet over it planned without writing, migrated, and planned up to date.
@Suite struct SQLiteTenantFolderTests {
    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder()
    }

    /// Creates `keys` as databases at `library` level 1.0 (a `note` table), by a fleet run.
    func makeTenants(_ keys: [String]) throws {
        let tenants = TenantList(keys.map { Tenant($0, url: folder.file("\($0).sqlite")) })
        let report = try MigrationFleet(appVersion: "1.0", tenants: tenants, template: Self.library).migrate()
        #expect(report.migrated == keys.count && report.succeeded)
    }

    /// `library` 1.0 creates `note`; 2.0 adds `pinned`.
    @Sendable static func library(_ tenant: Tenant, _ coordinator: MigrationCoordinator) throws {
        let library = try coordinator.manager("library", store: SQLiteStore(url: tenant.url!))
        library.register("1.0") { db in try db.execute("CREATE TABLE note(id integer PRIMARY KEY, title text)") }
        library.register("2.0") { db in try db.execute("ALTER TABLE note ADD COLUMN pinned integer NOT NULL DEFAULT 0") }
    }

    @Test func onlyMatchingRegularFilesAreTenants() throws {
        try makeTenants(["a", "b"])
        for name in ["notes.txt", ".hidden.sqlite", "a.sqlite-wal", "a.sqlite-journal"] {
            try Data("x".utf8).write(to: folder.file(name))
        }
        try FileManager.default.createDirectory(at: folder.file("sub.sqlite"), withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(at: folder.file("link.sqlite"), withDestinationURL: folder.file("a.sqlite"))
        try FileManager.default.createSymbolicLink(at: folder.file("dangling.sqlite"), withDestinationURL: folder.file("gone"))

        let source = SQLiteTenantFolder(folder: folder.url, group: { $0.lastPathComponent == "b.sqlite" ? "canary" : nil })
        let first = try walk(source)
        #expect(Set(first.map(\.key)) == ["a", "b", "link"])
        #expect(first.count == 3)
        for tenant in first {
            #expect(tenant.url?.path == folder.file("\(tenant.key).sqlite").path)
            #expect(tenant.group == (tenant.key == "b" ? "canary" : nil))
        }
        #expect(try walk(source) == first, "a second walk lists the same tenants in the same order")
        #expect(try walk(SQLiteTenantFolder(folder: folder.url, pattern: "b*")).map(\.key) == ["b"])
        // Whether or not a connection still keeps them, SQLite's own files are never tenants.
        for name in ["b.sqlite-wal", "b.sqlite-shm", "b.sqlite-journal"] where !FileManager.default.fileExists(atPath: folder.file(name).path) {
            try Data().write(to: folder.file(name))
        }
        #expect(try walk(SQLiteTenantFolder(folder: folder.url, pattern: "b*")).map(\.key) == ["b"])
    }

    @Test func aMissingFolderIsATypedErrorNamingIt() throws {
        let missing = folder.file("missing")
        let source = SQLiteTenantFolder(folder: missing)
        let sourceError = try #require(throws: SQLiteTenantFolderError.self) { try source.makeTenantIterator() }
        #expect(sourceError.folder == missing.path && sourceError.code == ENOENT)
        let fleet = MigrationFleet(appVersion: "2.0", tenants: source, template: Self.library)
        let error = try #require(throws: FleetError.self) { try fleet.plan() }
        #expect(error == .sourceUnreadable(
            source: "the SQLite files *.sqlite in \(missing.path)",
            message: "The folder of SQLite tenants \(missing.path) could not be read: No such file or directory (errno 2). "
                + "No tenant of it was migrated; check that the folder exists and that this process may list it."))
    }

    @Test func aFleetOfFilesIsPlannedWithoutWritingThenMigratedThenUpToDate() throws {
        try makeTenants(["a", "b", "c"])
        let fleet = MigrationFleet(appVersion: "2.0", tenants: SQLiteTenantFolder(folder: folder.url), template: Self.library)
        // A tenant's run lets go of its store's connection on the run's own thread, just after
        // reporting: wait for the last one to close its -wal and -shm files.
        #expect(try waitUntil { try folder.names().allSatisfy { !$0.hasSuffix("-wal") && !$0.hasSuffix("-shm") } })
        let namesBefore = try folder.names()
        let bytesBefore = try namesBefore.map { try Data(contentsOf: folder.file($0)) }

        let plan = try fleet.plan()
        #expect(plan.tenants == 3 && plan.toMigrate == 3 && !plan.isUpToDate)
        #expect(plan.pending.map(\.description) == ["3 tenants: library@2.0 (\(plan.pending[0].examples.joined(separator: ", ")))"])
        #expect(Set(plan.pending[0].examples) == ["a", "b", "c"])
        #expect(plan.levels.map { "\($0.manager) \($0.level?.description ?? "none") \($0.tenants)" } == ["library 1.0 3"])
        #expect(try folder.names() == namesBefore, "no -wal, -shm or journal file left")
        #expect(try namesBefore.map { try Data(contentsOf: folder.file($0)) } == bytesBefore, "the plan wrote nothing")

        let report = try fleet.migrate(FleetRunOptions(maxTenantsInFlight: 2))
        #expect(report.migrated == 3 && report.succeeded)
        for key in ["a", "b", "c"] {
            let store = SQLiteStore(url: folder.file("\(key).sqlite"))
            let columns = try store.read { db in try db.rows("SELECT name FROM pragma_table_info('note')").map { try $0[0] as String } }
            #expect(columns == ["id", "title", "pinned"])
        }
        let after = try fleet.plan()
        #expect(after.isUpToDate && after.upToDate == 3)
        #expect(after.description == "Fleet plan to app version 2.0: 3 tenants, up to date.\n  levels:\n    library 2.0: 3 tenants ("
            + after.levels[0].examples.joined(separator: ", ") + ")")
    }

    @Test func aFileThatIsNotADatabaseFailsItsTenantAlone() throws {
        try makeTenants(["a", "b"])
        try Data("not a database, just text long enough to be read as a header".utf8).write(to: folder.file("c.sqlite"))
        let fleet = MigrationFleet(appVersion: "2.0", tenants: SQLiteTenantFolder(folder: folder.url), template: Self.library)

        let plan = try fleet.plan()
        #expect(plan.failed == 1 && plan.failures.map(\.tenant) == ["c"] && plan.toMigrate == 2)
        let report = try fleet.migrate()
        #expect(report.migrated == 2 && report.failures.map(\.tenant.key) == ["c"])
        #expect(report.failures[0].message.contains(folder.file("c.sqlite").path))
    }

    private func walk(_ source: SQLiteTenantFolder) throws -> [Tenant] {
        var iterator = try source.makeTenantIterator()
        var tenants: [Tenant] = []
        while let tenant = try iterator.next() { tenants.append(tenant) }
        return tenants
    }
}
