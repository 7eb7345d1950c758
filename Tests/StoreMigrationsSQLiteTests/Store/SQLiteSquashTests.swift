import Foundation
import Testing
import StoreMigrations
import StoreMigrationsSQLite
import TestSupport

/// Squashed migrations on SQLite: the squashed body and the records of every replaced migration
/// commit in one transaction, or nothing does; a store part-way runs the replaced migrations.
@Suite struct SQLiteSquashTests {
    let scratch: TemporaryFolder
    let url: URL

    init() throws {
        scratch = try TemporaryFolder()
        url = scratch.file("library.sqlite")
    }

    /// A release: 1.0 (`note`), 1.1 (`note.guid`), 1.2 (`tag`), their squash unless `squash` is
    /// false (which throws after its writes when `failing`), and nothing past `appVersion`.
    func release(_ appVersion: Version, squash: Bool = true, failing: Bool = false) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: appVersion)
        let library = try coordinator.manager("library", store: SQLiteStore(url: url))
        library.register("1.0", options: .named("notes", fingerprint: "n1")) { db in
            try db.execute("CREATE TABLE note(id INTEGER PRIMARY KEY)")
        }
        library.register("1.1", options: .named("guids", fingerprint: "g1")) { db in
            try db.execute("ALTER TABLE note ADD COLUMN guid TEXT")
        }
        library.register("1.2", options: .named("tags", fingerprint: "t1")) { db in
            try db.execute("CREATE TABLE tag(name TEXT)")
        }
        if squash {
            library.squash(from: "1.0", through: "1.2", options: .named("schema 1.2")) { db in
                try db.execute("CREATE TABLE note(id INTEGER PRIMARY KEY, guid TEXT)")
                try db.execute("CREATE TABLE tag(name TEXT)")
                if failing { throw TestFailure(message: "squash failed after its writes") }
            }
        }
        return coordinator
    }

    func tables() throws -> [String?] {
        try RawSQLite.strings(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'store_migrations%' ORDER BY name", at: url.path)
    }

    /// The library's history; none before the record tables exist.
    func history() throws -> [[String?]] {
        let recordTables = try RawSQLite.strings(
            "SELECT name FROM sqlite_schema WHERE name = 'store_migrations_history'", at: url.path)
        guard !recordTables.isEmpty else { return [] }
        return try RawSQLite.rows(
            "SELECT version, name, fingerprint IS NOT NULL FROM store_migrations_history WHERE manager = 'library' ORDER BY id",
            at: url.path)
    }

    @Test func aFreshDatabaseRunsTheSquashAndRecordsEachReplacedMigrationInItsTransaction() throws {
        let coordinator = try release("1.2")
        #expect(try coordinator.plan().steps.map(\.id.description) == ["library:squash@1.2"])
        let report = try coordinator.run()
        #expect(report.steps.map(\.outcome) == [.applied])
        #expect(try tables() == ["note", "tag"])
        #expect(try RawSQLite.strings("SELECT name FROM pragma_table_info('note') ORDER BY cid", at: url.path) == ["id", "guid"])
        #expect(try history() == [["1.0", "notes", "1"], ["1.1", "guids", "1"], ["1.2", "tags", "1"]])
        #expect(try release("1.2").plan().isUpToDate)
    }

    @Test func aSquashThatThrowsLeavesNeitherItsTablesNorAnyRecord() throws {
        let report = try runReport(of: release("1.2", failing: true))
        #expect(report.steps.map(\.outcome) == [.failed(message: "squash failed after its writes")])
        #expect(try tables() == [])
        #expect(try history() == [])
        #expect(try release("1.2").run().succeeded)
        #expect(try history().map { $0[0] } == ["1.0", "1.1", "1.2"])
    }

    @Test func aDatabasePartWayRunsTheReplacedMigrations() throws {
        #expect(try release("1.0", squash: false).run().succeeded)
        let coordinator = try release("1.2")
        #expect(try coordinator.plan().steps.map(\.id.description) == ["library@1.1", "library@1.2"])
        #expect(try coordinator.run().succeeded)
        #expect(try tables() == ["note", "tag"])
        #expect(try history().map { $0[0] } == ["1.0", "1.1", "1.2"])
    }

    @Test func withTheOriginalsRemovedADatabasePartWayIsRefusedAndUnchanged() throws {
        #expect(try release("1.0", squash: false).run().succeeded)
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let library = try coordinator.manager("library", store: SQLiteStore(url: url))
        library.squash(from: "1.0", through: "1.2") { db in try db.execute("CREATE TABLE squashed(x)") }
        #expect(throws: MigrationError.squashedRangePartWay(
            manager: "library", store: SQLiteStore(url: url).description, squash: "1.2", applied: ["1.0"],
            originalsRegistered: false)) { try coordinator.run() }
        #expect(try tables() == ["note"])
        #expect(try history().map { $0[0] } == ["1.0"])
    }
}
