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

/// A step waits for another connection's write transaction up to the store's busy timeout (30 s
/// by default, like the file stores' lock timeout), and an empty database file is refused.
@Suite struct SQLiteWaitingTests {
    let scratch: TemporaryFolder
    let url: URL

    init() throws {
        scratch = try TemporaryFolder()
        url = scratch.file("waiting.sqlite")
        try SQLiteStore(url: url).write { db in try db.execute("CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT)") }
    }

    @Test func theDefaultWaitIsTheFileStoresLockTimeout() {
        #expect(SQLiteStore(url: url).busyTimeout == 30)
        #expect(PreferencesStore(url: scratch.file("p.json")).lockTimeout == .seconds(30))
    }

    @Test func aStepWaitsForAnotherWriterAndThenRuns() throws {
        let holder = try LockHolder(path: url.path)
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.4)
            holder.commit()
        }
        let start = ContinuousClock.now
        let store = SQLiteStore(url: url, busyTimeout: eventWaitBound)
        #expect(try store.apply(sqliteStep("1.0") { db in try db.execute("INSERT INTO item(name) VALUES ('after')") }).isApplied)
        #expect(ContinuousClock.now - start >= .milliseconds(300))
        #expect(try store.read { try $0.rows("SELECT name FROM item ORDER BY id").map { try $0[0] as String } } == ["holder", "after"])
    }

    @Test func pastTheBusyTimeoutTheStepFailsWithBusyAndRecordsNothing() throws {
        let holder = try LockHolder(path: url.path)
        defer { holder.commit() }
        let store = SQLiteStore(url: url, busyTimeout: 0.3)
        let start = ContinuousClock.now
        let error = try #require(#expect(throws: SQLiteError.self) {
            try store.apply(sqliteStep("1.0") { _ in Issue.record("the body must not run") })
        })
        let waited = ContinuousClock.now - start
        #expect(error.isBusy)
        #expect(error.sql == "BEGIN IMMEDIATE")
        #if os(Linux)
        // The holder is another connection of this process: /proc/locks names this process.
        #expect(error.holderProcessID == getpid())
        #expect(error.description.contains("Another connection of this process (pid \(getpid())) kept the database locked"))
        #endif
        #expect(waited >= .milliseconds(290), "\(waited)")
        holder.commit()
        #expect(try store.readRecords().isEmpty)
    }

    @Test func anEmptyDatabaseFileIsRefusedAndLeftAsItIs() throws {
        let empty = scratch.file("empty.sqlite")
        #expect(FileManager.default.createFile(atPath: empty.path, contents: Data()))
        let store = SQLiteStore(url: empty)
        let error = try #require(#expect(throws: SQLiteStoreError.self) {
            try store.apply(sqliteStep("1.0") { _ in Issue.record("the body must not run") })
        })
        #expect(error == SQLiteStoreError(
            .emptyDatabaseFile, store: store.description, migration: MigrationReference(manager: "library", version: "1.0")))
        #expect(error.description.contains("is an empty (0-byte) file: its data is gone"))
        #expect(throws: SQLiteStoreError(.emptyDatabaseFile, store: store.description)) { try store.write { _ in } }
        #expect(throws: SQLiteStoreError(.emptyDatabaseFile, store: store.description)) { try store.read { _ in } }
        // Planning says so too, before any step, rather than taking the file for a first launch.
        #expect(throws: SQLiteStoreError(.emptyDatabaseFile, store: store.description)) { try store.readRecords() }
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        try coordinator.manager("library", store: store).register("1.0") { _ in Issue.record("the body must not run") }
        let planError = #expect(throws: MigrationError.self) { try coordinator.plan() }
        guard case .unreadableState(manager: "library", store: store.description, _)? = planError else {
            Issue.record("expected unreadableState, got \(String(describing: planError))")
            return
        }
        #expect(try Data(contentsOf: empty).isEmpty)
        #expect(try scratch.names().filter { $0.hasPrefix("empty") } == ["empty.sqlite"])
    }

    /// A new database is written aside and linked into place: processes and threads creating it
    /// together never see it empty, and nothing is left aside.
    @Test func storesCreatingOneDatabaseTogetherAllSucceed() throws {
        let fresh = scratch.file("fresh.sqlite")
        let failures = EventLog()
        DispatchQueue.concurrentPerform(iterations: 8) { index in
            do {
                try SQLiteStore(url: fresh).apply(sqliteStep("1.0", manager: "m\(index)") { db in
                    try db.execute("CREATE TABLE IF NOT EXISTS item(id INTEGER PRIMARY KEY, name TEXT)")
                    try db.execute("INSERT INTO item(name) VALUES (?)", arguments: [.text("m\(index)")])
                })
            } catch {
                failures.append("\(error)")
            }
        }
        #expect(failures.all == [])
        let store = SQLiteStore(url: fresh)
        #expect(try store.readRecords().count == 8)
        #expect(try store.read { try $0.scalar("SELECT count(*) FROM item", as: Int.self) } == 8)
        #expect(try scratch.names().filter { $0.contains(".creating") } == [])
    }
}
