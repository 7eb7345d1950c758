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

/// Writes `sql` to the database at `path` from another process (SQLite's shell, which waits for
/// no lock: busy timeout 0), returning its exit status and output.
func writeFromAnotherProcess(_ path: String, _ sql: String) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: sqliteShell)
    process.arguments = [path, sql]
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let output = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: output, as: UTF8.self))
}

let sqliteShell = "/usr/bin/sqlite3"

extension Trait where Self == ConditionTrait {
    /// Runs the test only where SQLite's shell is installed, to act as another process.
    static var needsSQLiteShell: Self {
        .enabled(if: FileManager.default.isExecutableFile(atPath: sqliteShell), "needs \(sqliteShell) as another process")
    }
}

/// Whatever setting a body changes on the store's connection, the next step, write or read gets
/// the store's settings, and other processes are not locked out.
@Suite(.needsSQLiteShell) struct SQLiteConnectionHygieneTests {
    let scratch: TemporaryFolder
    let url: URL
    let store: SQLiteStore

    init() throws {
        scratch = try TemporaryFolder()
        url = scratch.file("hygiene.sqlite")
        store = SQLiteStore(url: url, foreignKeyCheck: .immediate)
        try store.apply(sqliteStep("1.0", manager: "setup") { db in
            try db.execute("""
                CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT);
                CREATE TABLE parent(id INTEGER PRIMARY KEY);
                CREATE TABLE child(id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent(id));
                CREATE TABLE countdown(n INTEGER);
                CREATE TRIGGER count_down AFTER INSERT ON countdown WHEN NEW.n > 0
                BEGIN INSERT INTO countdown VALUES (NEW.n - 1); END;
                """)
        })
    }

    /// Runs `library@1.0` with `body`, then checks what every test needs: a step of another
    /// manager on the same store succeeds, and another process can write at once.
    func stepLeaving(_ sql: String) throws {
        #expect(try store.apply(sqliteStep("1.0") { db in
            try db.execute("INSERT INTO item VALUES (1, 'library')")
            try db.execute(sql)
        }).isApplied)
        #expect(try store.apply(sqliteStep("1.0", manager: "other") { db in
            try db.execute("INSERT INTO item VALUES (2, 'other')")
        }).isApplied)
        let other = try writeFromAnotherProcess(url.path, "INSERT INTO item VALUES (3, 'another process')")
        #expect(other.status == 0, "\(other.output)")
        let items = try store.read { db in try db.rows("SELECT name FROM item ORDER BY id").map { try $0[0] as String } }
        #expect(items == ["library", "other", "another process"])
        let records = try store.readRecords()
        #expect(records["library"]?.appliedVersions == ["1.0"])
        #expect(records["other"]?.appliedVersions == ["1.0"])
    }

    @Test func queryOnly() throws {
        try stepLeaving("PRAGMA query_only = ON")
        #expect(try store.write { try $0.pragmaFlag("query_only") } == false)
    }

    @Test func exclusiveLockingMode() throws {
        try stepLeaving("PRAGMA locking_mode = EXCLUSIVE")
        #expect(try store.write { try $0.scalar("PRAGMA locking_mode", as: String.self) } == "normal")
    }

    /// A body that stops the store's connection from waiting: the next step must still wait for
    /// another connection's write transaction.
    @Test func busyTimeout() throws {
        try stepLeaving("PRAGMA busy_timeout = 0")
        let holder = try LockHolder(path: url.path)
        let released = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.3)
            holder.commit()
            released.signal()
        }
        #expect(try store.apply(sqliteStep("1.1") { db in try db.execute("INSERT INTO item VALUES (5, 'waited')") }).isApplied)
        released.wait()
        #expect(try store.read { try $0.scalar("SELECT count(*) FROM item", as: Int.self) } == 5)
    }

    /// `foreign_keys` cannot change inside a transaction: a body's attempt leaves enforcement on.
    @Test func foreignKeys() throws {
        try stepLeaving("PRAGMA foreign_keys = OFF")
        let error = try #require(#expect(throws: SQLiteError.self) {
            try store.apply(sqliteStep("1.1") { db in try db.execute("INSERT INTO child VALUES (1, 42)") })
        })
        #expect(error.isForeignKeyViolation)
        #expect(try store.read { try $0.scalar("SELECT count(*) FROM child", as: Int.self) } == 0)
    }

    @Test func recursiveTriggers() throws {
        try stepLeaving("PRAGMA recursive_triggers = ON")
        try store.write { db in try db.execute("INSERT INTO countdown VALUES (3)") }
        // Without recursion the trigger fires once: 3, then 2.
        #expect(try store.read { try $0.rows("SELECT n FROM countdown ORDER BY n DESC").map { try $0[0] as Int } } == [3, 2])
    }

    /// A temporary trigger lives on the connection, committed or not: it must not fire in later steps.
    @Test func temporaryTrigger() throws {
        try stepLeaving("CREATE TEMP TRIGGER wipe AFTER INSERT ON main.item BEGIN DELETE FROM parent; END")
        try store.write { db in try db.execute("INSERT INTO parent VALUES (1); INSERT INTO item VALUES (9, 'later')") }
        #expect(try store.read { try $0.scalar("SELECT count(*) FROM parent", as: Int.self) } == 1)
    }

    /// The same for `write`: settings changed in its body do not outlive it.
    @Test func writeLeavesNothingBehind() throws {
        try store.write { db in try db.execute("PRAGMA locking_mode = EXCLUSIVE; INSERT INTO item VALUES (1, 'write')") }
        let other = try writeFromAnotherProcess(url.path, "INSERT INTO item VALUES (2, 'another process')")
        #expect(other.status == 0, "\(other.output)")
        #expect(try store.write { try $0.scalar("PRAGMA locking_mode", as: String.self) } == "normal")
    }

    /// With a rollback journal, an exclusive locking mode keeps the database's lock after the
    /// step's commit: the store closes the connection at once, not at its next use, which may
    /// never come, so that another process writes right after the step.
    @Test func exclusiveLockingModeIsReleasedRightAfterTheStep() throws {
        let journalled = scratch.file("journalled.sqlite")
        let store = SQLiteStore(url: journalled, journalMode: .keep)
        try store.write { db in try db.execute("CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT)") }
        #expect(try store.read { try $0.scalar("PRAGMA journal_mode", as: String.self) } == "delete")
        #expect(try store.apply(sqliteStep("1.0") { db in
            try db.execute("PRAGMA locking_mode = EXCLUSIVE; INSERT INTO item VALUES (1, 'library')")
        }).isApplied)
        let other = try writeFromAnotherProcess(journalled.path, "INSERT INTO item VALUES (2, 'another process')")
        #expect(other.status == 0, "\(other.output)")
        #expect(try store.read { try $0.rows("SELECT name FROM item ORDER BY id").map { try $0[0] as String } } == ["library", "another process"])
    }

    /// An unchanged connection is kept: steps do not pay for reopening it.
    @Test func unchangedConnectionIsKept() throws {
        let first = try store.write { ObjectIdentifier($0) }
        try store.apply(sqliteStep("1.0") { db in try db.execute("INSERT INTO item VALUES (1, 'x')") })
        #expect(try store.write { ObjectIdentifier($0) } == first)
    }
}

/// Another connection holding the database's write lock until ``commit()``.
// @unchecked Sendable: the connection is used by one thread at a time, the test's and then, after
// it handed the holder over, the releasing thread's.
final class LockHolder: @unchecked Sendable {
    private let database: Database

    init(path: String) throws {
        database = try Database(path: path, busyTimeout: 0)
        try database.execute("BEGIN IMMEDIATE; INSERT INTO item(name) VALUES ('holder')")
    }

    func commit() {
        try? database.execute("COMMIT")
    }
}
