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

/// `transaction: .none` steps, the configuration closure, `checkForeignKeys()`, `close()` and
/// read-only stores.
@Suite struct SQLiteStoreOptionsTests {
    let scratch: TemporaryFolder
    let url: URL
    let store: SQLiteStore

    init() throws {
        scratch = try TemporaryFolder()
        url = scratch.file("options.sqlite")
        store = SQLiteStore(url: url)
        try store.apply(sqliteStep("1.0") { db in
            try db.execute("""
                CREATE TABLE parent(id INTEGER PRIMARY KEY);
                CREATE TABLE child(id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent(id));
                CREATE TABLE blob(id INTEGER PRIMARY KEY, data BLOB);
                INSERT INTO parent VALUES (1);
                """)
        })
    }

    func runWithoutTransaction(_ store: SQLiteStore, _ version: Version, _ body: @escaping (Database) throws -> Void) throws -> Outcome {
        try StepExecutor.migrate(version, of: "library", in: store, transaction: .none) { db, _ in try body(db) }
    }

    @Test func vacuumRunsInANonTransactionalStepAndIsRecordedOnce() throws {
        try store.write { db in
            try db.execute("INSERT INTO blob(data) SELECT zeroblob(4096) FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200) SELECT i FROM n)")
            try db.execute("DELETE FROM blob")
        }
        let pagesBefore = try store.read { try $0.scalar("PRAGMA page_count", as: Int.self) ?? 0 }
        let lockURL = URL(fileURLWithPath: url.path + ".migration-lock")
        #expect(try runWithoutTransaction(store, "1.1") { db in
            // The step holds the lock file: another process's `.none` step would wait.
            #expect(throws: FileStoreError.self) { _ = try FileLock(url: lockURL, store: "probe", timeout: .zero) }
            try db.execute("VACUUM")
        }.isApplied)
        let pagesAfter = try store.read { try $0.scalar("PRAGMA page_count", as: Int.self) ?? 0 }
        #expect(pagesAfter < pagesBefore, "\(pagesAfter) < \(pagesBefore)")
        #expect(try store.readRecords()["library"]?.appliedVersions == ["1.0", "1.1"])
        #expect(try runWithoutTransaction(store, "1.1") { _ in Issue.record("already applied") } == .alreadyApplied(level: "1.1"))
        _ = try FileLock(url: lockURL, store: "probe", timeout: .zero)
    }

    @Test func vacuumInATransactionalStepFailsAndRecordsNothing() throws {
        let error = try #require(#expect(throws: SQLiteError.self) {
            try store.apply(sqliteStep("1.1") { db in try db.execute("VACUUM") })
        })
        #expect(error.message == "cannot VACUUM from within a transaction")
        #expect(try store.readRecords()["library"]?.appliedVersions == ["1.0"])
    }

    @Test func aNonTransactionalBodyThatThrowsRecordsNothing() throws {
        #expect(throws: SQLiteError.self) {
            try runWithoutTransaction(store, "1.1") { db in
                try db.execute("INSERT INTO parent VALUES (2)")
                try db.execute("INSERT INTO parent VALUES (2)")
            }
        }
        #expect(try store.readRecords()["library"]?.appliedVersions == ["1.0"])
        // At least once: what ran before the error stays.
        #expect(try store.read { try $0.scalar("SELECT count(*) FROM parent", as: Int.self) } == 2)
    }

    @Test func aNonTransactionalStepCannotLeaveForeignKeysOff() throws {
        let immediate = SQLiteStore(url: url, foreignKeyCheck: .immediate)
        #expect(try runWithoutTransaction(immediate, "1.1") { db in try db.execute("PRAGMA foreign_keys = OFF") }.isApplied)
        let error = try #require(#expect(throws: SQLiteError.self) {
            try immediate.apply(sqliteStep("1.2") { db in try db.execute("INSERT INTO child VALUES (1, 42)") })
        })
        #expect(error.isForeignKeyViolation)
        #expect(try immediate.read { try $0.scalar("SELECT count(*) FROM child", as: Int.self) } == 0)
    }

    @Test func aFunctionRegisteredInTheConfigurationIsUsableInEveryStep() throws {
        let opened = Locked(0)
        let configured = SQLiteStore(url: url) { db in
            opened.value += 1
            try db.createFunction("slug", argumentCount: 1) { arguments in
                guard case let .text(title) = arguments[0] else { return .null }
                return .text(title.lowercased().replacingOccurrences(of: " ", with: "-"))
            }
        }
        try configured.apply(sqliteStep("1.1") { db in
            try db.execute("CREATE TABLE note(title TEXT, slug TEXT); INSERT INTO note(title) VALUES ('Hello World')")
            try db.execute("UPDATE note SET slug = slug(title)")
            try db.execute("PRAGMA recursive_triggers = ON")   // the connection is reopened after this step
        })
        try configured.apply(sqliteStep("1.2") { db in try db.execute("INSERT INTO note VALUES ('Second One', slug('Second One'))") })
        #expect(opened.value == 2)
        #expect(try configured.read { try $0.rows("SELECT slug FROM note").map { try $0[0] as String } } == ["hello-world", "second-one"])
        let thrown = #expect(throws: SQLiteError.self) { try configured.read { try $0.execute("SELECT slug(1, 2)") } }
        #expect(thrown?.message == "wrong number of arguments to function slug()")
    }

    @Test func checkForeignKeysIsPublicAndListsTheViolations() throws {
        let error = try #require(#expect(throws: SQLiteError.self) {
            try store.apply(sqliteStep("1.1") { db in
                try db.execute("INSERT INTO child VALUES (7, 42)")
                try db.checkForeignKeys(in: ["child"])
            })
        })
        #expect(error.foreignKeyViolations == [ForeignKeyViolation(table: "child", rowID: 7, parentTable: "parent", foreignKeyID: 0)])
        #expect(try store.read { try $0.scalar("SELECT count(*) FROM child", as: Int.self) } == 0)
    }

    @Test func closeReleasesTheConnectionAndTheStoreReopensOnUse() throws {
        let first = try store.write { ObjectIdentifier($0) }
        store.close()
        // Closed: the file can be replaced under the store, and the store sees the new one.
        try FileManager.default.removeItem(at: url)
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
        #expect(try store.readRecords().isEmpty)
        try store.apply(sqliteStep("1.0") { db in
            try db.execute("CREATE TABLE again(id INTEGER)")
            self.store.close()   // from a body: closed when the step ends
            try db.execute("INSERT INTO again VALUES (1)")
        })
        #expect(try store.readRecords()["library"]?.appliedVersions == ["1.0"])
        #expect(try store.read { try $0.scalar("SELECT count(*) FROM again", as: Int.self) } == 1)
        _ = first
    }

    @Test func aReadOnlyStorePlansAndReadsButRefusesToRun() throws {
        store.close()
        let bytes = try Data(contentsOf: url)
        let readOnly = SQLiteStore(url: url, access: .readOnly)
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let manager = try coordinator.manager("library", store: readOnly)
        manager.register("1.0") { _ in }
        manager.register("1.1") { db in try db.execute("INSERT INTO parent VALUES (5)") }
        let plan = try coordinator.plan()
        #expect(plan.steps.map(\.id.description) == ["library@1.1"])
        let failure = try #require(#expect(throws: MigrationRunError.self) { try coordinator.run() })
        #expect(failure.report.failures.first?.error as? SQLiteStoreError == SQLiteStoreError(
            .readOnly, store: readOnly.description, migration: MigrationReference(manager: "library", version: "1.1")))
        #expect(throws: SQLiteStoreError(.readOnly, store: readOnly.description)) { try readOnly.write { _ in } }
        #expect(throws: SQLiteStoreError(
            .readOnly, store: readOnly.description, migration: MigrationReference(manager: "library", version: "1.1"))) {
            try runWithoutTransaction(readOnly, "1.1") { _ in }
        }
        #expect(try readOnly.read { try $0.scalar("SELECT count(*) FROM parent", as: Int.self) } == 1)
        #expect(throws: SQLiteError.self) { try readOnly.read { try $0.execute("INSERT INTO parent VALUES (9)") } }
        readOnly.close()
        #expect(try Data(contentsOf: url) == bytes)
    }

    @Test func aReadOnlyStoreCreatesNothing() throws {
        let missing = SQLiteStore(url: scratch.file("missing/none.sqlite"), access: .readOnly)
        #expect(try missing.readRecords().isEmpty)
        #expect(throws: SQLiteError.self) { try missing.read { _ in } }
        #expect(!FileManager.default.fileExists(atPath: scratch.file("missing").path))
    }
}
