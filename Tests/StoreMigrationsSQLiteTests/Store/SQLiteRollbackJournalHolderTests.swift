import Foundation
import Testing
@testable import CrashRunner
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif

/// A rollback-journal database (`journalMode: .keep`) whose COMMIT waits for a reader: the
/// holder named, in the wait event and the `SQLITE_BUSY` error, is the reader, never the writer
/// that waits (which holds the database's reserved lock itself).
@Suite struct SQLiteRollbackJournalHolderTests {
    let folder: TemporaryFolder
    let url: URL

    init() throws {
        folder = try TemporaryFolder()
        url = folder.file(Scenario.databaseName)
        try SQLiteStore(url: url, journalMode: .keep).write { db in try db.execute("CREATE TABLE item(id INTEGER PRIMARY KEY)") }
        #expect(try SQLiteStore(url: url, journalMode: .keep).read { try $0.scalar("PRAGMA journal_mode", as: String.self) } == "delete")
    }

    /// Waits collected from a request, across threads.
    private final class Waits: @unchecked Sendable {
        // `lock` guards `all`.
        private let lock = NSLock()
        private var all: [StoreWait] = []
        func append(_ wait: StoreWait) { lock.withLock { all.append(wait) } }
        var seen: [StoreWait] { lock.withLock { all } }
    }

    /// One step inserting a row, through a request that collects waits; the error it fails with.
    private func stepBlockedAtCommit() throws -> (error: SQLiteError, waits: [StoreWait]) {
        let waits = Waits()
        let store = SQLiteStore(url: url, busyTimeout: 0.3, journalMode: .keep)
        let request = TransactionRequest(migration: MigrationReference(manager: "library", version: "1"), onWait: waits.append)
        let error = try #require(throws: SQLiteError.self) {
            try store.transaction(request) { _, db in try db.execute("INSERT INTO item(id) VALUES (1)") }
        }
        #expect(try store.read { try $0.scalar("SELECT count(*) FROM item", as: Int.self) } == 0)
        return (error, waits.seen)
    }

    #if os(Linux)
    @Test func aReaderInAnotherProcessIsNamedNotTheWaitingWriter() throws {
        let logs = folder.file("logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        let marker = folder.file("reading")
        let reader = try CrashRunnerExecutable().start(["read", folder.url.path, marker.path], logs: logs)
        defer { reader.kill() }
        #expect(waitUntil { FileManager.default.fileExists(atPath: marker.path) || reader.wait(timeout: 0) != nil })
        #expect(reader.wait(timeout: 0) == nil, "the reader ended early")

        let (error, waits) = try stepBlockedAtCommit()
        #expect(error.isBusy)
        #expect(error.sql == "COMMIT")
        #expect(error.holderProcessID == reader.pid)
        #expect(error.description.contains("The process \(reader.pid) kept reading the database longer than the busy timeout"), "\(error)")
        #expect(!error.description.contains("of this process"), "\(error)")
        #expect(waits.map(\.holderProcessID) == [reader.pid], "\(waits)")
        #expect(waits.first?.lock == "the readers' locks on \(url.lastPathComponent), to commit", "\(waits)")
    }
    #endif

    @Test func aReaderOnAnotherConnectionOfThisProcessIsNamedAsAReader() throws {
        let reader = try Database(path: url.path, busyTimeout: 0, mode: .migrating(switchingToWAL: false))
        try reader.execute("BEGIN")
        _ = try reader.scalar("SELECT count(*) FROM item", as: Int.self)
        defer { try? reader.execute("COMMIT") }

        let (error, waits) = try stepBlockedAtCommit()
        #expect(error.isBusy)
        #expect(error.sql == "COMMIT")
        #if os(Linux)
        #expect(error.holderProcessID == getpid())
        #expect(waits.first?.lock == "the readers' locks on \(url.lastPathComponent), to commit", "\(waits)")
        #expect(waits.map(\.holderProcessID) == [getpid()], "\(waits)")
        #expect(error.description.contains("Another connection of this process (pid \(getpid())) kept reading the database"), "\(error)")
        #else
        #expect(error.description.contains("A reader (another connection or process) kept reading the database"), "\(error)")
        #endif
    }
}
