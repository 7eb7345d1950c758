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

/// In WAL mode, the batches of a resumable step commit at `synchronous = NORMAL` (no sync of the
/// WAL) and the batch that finishes the step is followed by a checkpoint; every other step
/// commits at the connection's own level; connections in rollback-journal mode or already at
/// `NORMAL` or below are left as they are. When a reader keeps that checkpoint from copying, a
/// commit at the connection's own level syncs the WAL in its place.
@Suite struct BatchCommitSyncTests {
    static let rows = 1_000
    let folder: TemporaryFolder
    let url: URL

    init() throws {
        folder = try TemporaryFolder()
        url = folder.file("library.sqlite")
    }

    /// A coordinator whose `1.0` creates `item(id, calls)` with `rows` rows and whose `2.0`
    /// counts a call on every row, 300 rows a batch: three batches leave the step in progress,
    /// the fourth finishes it.
    func coordinator(_ store: SQLiteStore, appVersion: Version = "2.0") throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: appVersion)
        let library = try coordinator.manager("library", store: store)
        library.register("1.0") { db in
            try db.execute("CREATE TABLE item(id INTEGER PRIMARY KEY, calls INTEGER NOT NULL DEFAULT 0)")
            let insert = try db.prepare("INSERT INTO item(id) VALUES (?)")
            for id in 1...Self.rows { try insert.execute(arguments: [.integer(Int64(id))]) }
        }
        library.registerResumable("2.0", transformingRowsOf: "item", columns: ["calls"], batchSize: .fixed(300)) { row in
            ["calls": .integer(try row["calls"] + 1)]
        }
        return coordinator
    }

    /// Every row counted once, and the step recorded applied.
    func expectEveryRowOnce() throws {
        #expect(try RawSQLite.strings("SELECT calls || 'x' || count(*) FROM item GROUP BY calls", at: url.path) == ["1x\(Self.rows)"])
        #expect(try RawSQLite.strings("SELECT level FROM store_migrations_levels", at: url.path) == ["2.0"])
    }

    @Test func batchesCommitAtNormalAndTheLastIsCheckpointedOrdinaryStepsAtTheConnectionsLevel() throws {
        let levels = CommitLevels()
        let store = SQLiteStore(url: url) { db in levels.watch(db) }
        try coordinator(store).run()
        // 1.0 (an ordinary step), then the four batches: FULL is 2, NORMAL 1.
        #expect(levels.seen == [2, 1, 1, 1, 1])
        #expect(try store.read { db in try db.scalar("PRAGMA synchronous", as: Int.self) } == 2)
        try expectEveryRowOnce()
        // The WAL hook replaced the automatic checkpoints: only the step's own checkpoint after
        // its last batch put the rows and the record in the database file, which a copy of that
        // file alone shows.
        let copy = folder.file("copy.sqlite")
        try FileManager.default.copyItem(at: url, to: copy)
        #expect(try RawSQLite.strings("SELECT calls || 'x' || count(*) FROM item GROUP BY calls", at: copy.path) == ["1x\(Self.rows)"])
        #expect(try RawSQLite.strings("SELECT level FROM store_migrations_levels", at: copy.path) == ["2.0"])
    }

    @Test func aReaderHoldingTheCheckpointBackGetsTheWALSyncedByACommitAtTheConnectionsLevel() throws {
        // 1.0 alone; closing the store checkpoints its WAL and removes it.
        let first = SQLiteStore(url: url)
        try coordinator(first, appVersion: "1.0").run()
        first.close()
        // A reader whose snapshot predates every batch: the checkpoint after the last can copy
        // no frame, and SQLite then syncs nothing.
        var reader: OpaquePointer?
        guard sqlite3_open_v2(url.path, &reader, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK else {
            throw TestFailure(message: "cannot open a reader of \(url.path)")
        }
        defer { sqlite3_close_v2(reader) }
        #expect(sqlite3_exec(reader, "BEGIN; SELECT count(*) FROM item", nil, nil, nil) == SQLITE_OK)

        let levels = CommitLevels()
        let store = SQLiteStore(url: url) { db in levels.watch(db) }
        try coordinator(store).run()
        // The four batches at NORMAL (1), then the commit at the connection's FULL (2) that
        // synced their frames.
        #expect(levels.seen == [1, 1, 1, 1, 2])
        #expect(sqlite3_exec(reader, "COMMIT", nil, nil, nil) == SQLITE_OK)
        try expectEveryRowOnce()
        #expect(try RawSQLite.strings("PRAGMA user_version", at: url.path) == ["0"])
    }

    @Test func aConnectionAlreadyAtOffCommitsEveryBatchAtOff() throws {
        let levels = CommitLevels()
        let store = SQLiteStore(url: url) { db in
            try db.execute("PRAGMA synchronous = OFF")
            levels.watch(db)
        }
        try coordinator(store).run()
        #expect(levels.seen == [0, 0, 0, 0, 0])
        try expectEveryRowOnce()
    }

    @Test func aRollbackJournalKeepsTheConnectionsLevelInEveryBatch() throws {
        // No WAL, no WAL hook: each batch's body reads the level its transaction runs at.
        let seen = Locked<[Int]>([])
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let library = try coordinator.manager("library", store: SQLiteStore(url: url, journalMode: .keep))
        library.register("1.0") { db in try db.execute("CREATE TABLE item(id INTEGER PRIMARY KEY)") }
        library.registerResumable("2.0", batchSize: .fixed(1)) { db, batch in
            seen.value.append(try db.scalar("PRAGMA synchronous", as: Int.self) ?? -1)
            let done = batch.done + 1
            return done == 3 ? .finished(processed: 1) : .more(cursor: String(done), processed: 1)
        }
        try coordinator.run()
        #expect(seen.value == [2, 2, 2])
        #expect(try RawSQLite.strings("PRAGMA journal_mode", at: url.path) == ["delete"])
    }
}

/// The `synchronous` level of each commit of a connection, read by its WAL hook, which SQLite
/// calls after each commit in WAL mode, before the store's code that follows the `COMMIT` runs.
/// (The hook replaces the connection's automatic checkpoints, which a test of a few pages does
/// not miss.)
final class CommitLevels: Sendable {
    private let levels = Locked<[Int]>([])

    var seen: [Int] { levels.value }

    func watch(_ db: Database) {
        // Unretained: the test keeps the object alive for as long as the store's connections.
        sqlite3_wal_hook(db.handle, { context, handle, _, _ in
            let levels = Unmanaged<CommitLevels>.fromOpaque(context!).takeUnretainedValue()
            var statement: OpaquePointer?
            guard sqlite3_prepare_v2(handle, "PRAGMA synchronous", -1, &statement, nil) == SQLITE_OK else { return SQLITE_OK }
            defer { sqlite3_finalize(statement) }
            // A connection's commits, and so its hook's calls, come one after another.
            if sqlite3_step(statement) == SQLITE_ROW { levels.levels.value.append(Int(sqlite3_column_int(statement, 0))) }
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }
}
