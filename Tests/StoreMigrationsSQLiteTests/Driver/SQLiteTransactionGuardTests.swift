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

// SQLite's extended codes are C macro expressions Swift does not import.
let SQLITE_CONSTRAINT_COMMITHOOK = SQLITE_CONSTRAINT | (2 << 8)
let SQLITE_CONSTRAINT_PRIMARYKEY = SQLITE_CONSTRAINT | (6 << 8)
let SQLITE_CONSTRAINT_TRIGGER = SQLITE_CONSTRAINT | (7 << 8)
let SQLITE_CONSTRAINT_UNIQUE = SQLITE_CONSTRAINT | (8 << 8)

/// A migration body that ends the store's transaction, by any means, fails its step with a
/// ``SQLiteStoreError`` naming the step and the statement, and leaves nothing of the step on disk.
@Suite struct SQLiteTransactionGuardTests {
    let scratch: TemporaryFolder
    let url: URL
    let store: SQLiteStore

    init() throws {
        scratch = try TemporaryFolder()
        url = scratch.file("guard.sqlite")
        store = SQLiteStore(url: url)
        try store.apply(sqliteStep("1.0") { db in
            try db.execute("CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO item VALUES (1, 'one')")
        })
    }

    /// What a later launch sees: the rows of `item`, the applied versions and the history.
    func onDisk() throws -> (items: [Int64], applied: [Version], history: [String]) {
        let reader = SQLiteStore(url: url)
        let (items, history) = try reader.read { db in
            (try db.rows("SELECT id FROM item ORDER BY id").map { try $0[0] as Int64 },
             try db.rows("SELECT version FROM store_migrations_history ORDER BY id").map { try $0[0] as String })
        }
        return (items, try reader.readRecords()["library"]?.appliedVersions ?? [], history)
    }

    /// The error a step of `library@1.1` fails with when `statement` ended its transaction.
    func ended(by statement: String, code: Int32, message: String, version: Version = "1.1") -> SQLiteStoreError {
        SQLiteStoreError(
            .transactionEnded(
                statement: statement,
                sqliteError: SQLiteError(extendedCode: code, message: message, sql: statement, path: url.path)),
            store: store.description, migration: MigrationReference(manager: "library", version: version))
    }

    /// Runs `library@1.1` with `body`, expecting the guard's error.
    func failingStep(_ body: @escaping (Database) throws -> Void) throws -> SQLiteStoreError {
        try #require(#expect(throws: SQLiteStoreError.self) { try store.apply(sqliteStep("1.1", body)) })
    }

    func expectNothingOfTheStep() throws {
        let disk = try onDisk()
        #expect(disk.items == [1])
        #expect(disk.applied == ["1.0"])
        #expect(disk.history == ["1.0"])
    }

    @Test func insertOrRollbackCaughtWithTryFailsTheStepAndLaterStatementsAreRefused() throws {
        let error = try failingStep { db in
            try db.execute("INSERT INTO item VALUES (2, 'two')")
            try? db.execute("INSERT OR ROLLBACK INTO item VALUES (1, 'again')")
            // Without the guard this would commit on its own, in autocommit mode.
            let refused = #expect(throws: SQLiteStoreError.self) { try db.execute("INSERT INTO item VALUES (3, 'three')") }
            #expect(refused?.reason == .transactionEnded(
                statement: "INSERT OR ROLLBACK INTO item VALUES (1, 'again')",
                sqliteError: SQLiteError(
                    extendedCode: SQLITE_CONSTRAINT_PRIMARYKEY, message: "UNIQUE constraint failed: item.id",
                    sql: "INSERT OR ROLLBACK INTO item VALUES (1, 'again')", path: db.path)))
            try? db.execute("INSERT INTO item VALUES (4, 'four')")
        }
        #expect(error == ended(
            by: "INSERT OR ROLLBACK INTO item VALUES (1, 'again')", code: SQLITE_CONSTRAINT_PRIMARYKEY,
            message: "UNIQUE constraint failed: item.id"))
        #expect(error.description.contains("library@1.1"))
        try expectNothingOfTheStep()
        // The connection is fine for the next step.
        #expect(try store.apply(sqliteStep("1.1") { db in try db.execute("INSERT INTO item VALUES (2, 'two')") }).isApplied)
        #expect(try onDisk().items == [1, 2])
    }

    @Test func onConflictRollbackInTheSchema() throws {
        let error = try failingStep { db in
            try db.execute("CREATE TABLE tag(name TEXT UNIQUE ON CONFLICT ROLLBACK)")
            try db.execute("INSERT INTO tag VALUES ('a'); INSERT INTO item VALUES (2, 'two')")
            try? db.execute("INSERT INTO tag VALUES ('a')")
            try? db.execute("CREATE TABLE tag(name TEXT)")
        }
        #expect(error == ended(by: "INSERT INTO tag VALUES ('a')", code: SQLITE_CONSTRAINT_UNIQUE, message: "UNIQUE constraint failed: tag.name"))
        try expectNothingOfTheStep()
        #expect(try SQLiteStore(url: url).read { try $0.tableExists("tag") } == false)
    }

    @Test func triggerRaisingRollback() throws {
        let error = try failingStep { db in
            try db.execute("""
                CREATE TRIGGER no_empty BEFORE INSERT ON item WHEN NEW.name = ''
                BEGIN SELECT RAISE(ROLLBACK, 'empty names are not allowed'); END
                """)
            try db.execute("INSERT INTO item VALUES (2, 'two')")
            try? db.execute("INSERT INTO item VALUES (3, '')")
        }
        #expect(error == ended(by: "INSERT INTO item VALUES (3, '')", code: SQLITE_CONSTRAINT_TRIGGER, message: "empty names are not allowed"))
        try expectNothingOfTheStep()
    }

    /// After the transaction ended, a savepoint of the body would be a new transaction, and its
    /// `RELEASE` a commit: refused through ``Database``, vetoed by the commit hook through the C API.
    @Test func topLevelReleaseOfTheBodysSavepointCannotCommit() throws {
        let results = EventLog()
        let error = try failingStep { db in
            try? db.execute("INSERT OR ROLLBACK INTO item VALUES (1, 'again')")
            let refused = #expect(throws: SQLiteStoreError.self) { try db.execute("SAVEPOINT mine") }
            #expect(refused != nil)
            // Straight through the C API, past the statement guard: the commit hook still vetoes.
            let status = sqlite3_exec(db.handle, "SAVEPOINT mine; INSERT INTO item VALUES (5, 'five'); RELEASE mine", nil, nil, nil)
            results.append("\(status)")
            sqlite3_exec(db.handle, "ROLLBACK", nil, nil, nil)
        }
        #expect(results.all == ["\(SQLITE_CONSTRAINT_COMMITHOOK)"])
        #expect(error == ended(
            by: "INSERT OR ROLLBACK INTO item VALUES (1, 'again')", code: SQLITE_CONSTRAINT_PRIMARYKEY,
            message: "UNIQUE constraint failed: item.id"))
        try expectNothingOfTheStep()
    }

    /// A transaction ended where the guard could not see it (the C API) is still caught when the
    /// body returns, and nothing commits.
    @Test func transactionEndedThroughTheCAPIIsCaughtWhenTheBodyReturns() throws {
        let error = try failingStep { db in
            try db.execute("INSERT INTO item VALUES (2, 'two')")
            sqlite3_exec(db.handle, "INSERT OR ROLLBACK INTO item VALUES (1, 'again')", nil, nil, nil)
            #expect(sqlite3_exec(db.handle, "INSERT INTO item VALUES (3, 'three')", nil, nil, nil) == SQLITE_CONSTRAINT_COMMITHOOK)
        }
        #expect(error.reason == .transactionEnded(statement: "a statement run outside Database and Statement", sqliteError: nil))
        #expect(error.migration == MigrationReference(manager: "library", version: "1.1"))
        try expectNothingOfTheStep()
    }

    @Test func savepointsInsideTheBodyKeepWorking() throws {
        try store.apply(sqliteStep("1.1") { db in
            try db.execute("SAVEPOINT a; INSERT INTO item VALUES (2, 'two'); ROLLBACK TO a; RELEASE a")
            try db.execute("SAVEPOINT b; INSERT INTO item VALUES (3, 'three'); RELEASE b")
            try db.execute("SAVEPOINT c; SAVEPOINT d; INSERT INTO item VALUES (4, 'four'); RELEASE d; RELEASE c")
        })
        let disk = try onDisk()
        #expect(disk.items == [1, 3, 4])
        #expect(disk.applied == ["1.0", "1.1"])
        #expect(disk.history == ["1.0", "1.1"])
    }

    @Test func bodyThatLetsTheEndingErrorThroughGetsTheSameTypedError() throws {
        let error = try failingStep { db in
            try db.execute("INSERT OR ROLLBACK INTO item VALUES (1, 'again')")
        }
        #expect(error == ended(
            by: "INSERT OR ROLLBACK INTO item VALUES (1, 'again')", code: SQLITE_CONSTRAINT_PRIMARYKEY,
            message: "UNIQUE constraint failed: item.id"))
        try expectNothingOfTheStep()
    }

    @Test func writeIsGuardedToo() throws {
        let error = try #require(#expect(throws: SQLiteStoreError.self) {
            try store.write { db in
                try db.execute("INSERT INTO item VALUES (2, 'two')")
                try? db.execute("INSERT OR ROLLBACK INTO item VALUES (1, 'again')")
                try? db.execute("INSERT INTO item VALUES (3, 'three')")
            }
        })
        #expect(error.migration == nil)
        #expect(error.description.hasPrefix("A write on \(store.description) ended its transaction"))
        try expectNothingOfTheStep()
    }

    /// SQLite rolls the whole transaction back itself after `SQLITE_FULL` (here, writing the
    /// WAL as the page cache spills): a body that catches the error must not go on committing
    /// statement by statement.
    @Test(.needsScratchMount) func diskFullCaughtWithTryLeavesNothing() throws {
        let mount = try ScratchMount.make(size: 512 * 1024).get()
        let small = SQLiteStore(url: mount.url.appendingPathComponent("full.sqlite"))
        try small.apply(sqliteStep("1.0") { db in
            try db.execute("PRAGMA cache_size = 2; CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO item VALUES (1, 'one')")
        })
        let failure = #expect(throws: SQLiteStoreError.self) {
            try small.apply(sqliteStep("1.1") { db in
                for number in 2...400 {
                    try? db.execute("INSERT INTO item VALUES (?, zeroblob(8192))", arguments: [.integer(Int64(number))])
                }
            })
        }
        let error = try #require(failure)
        guard case let .transactionEnded(statement, sqliteError) = error.reason else {
            Issue.record("\(error)")
            return
        }
        #expect(statement == "INSERT INTO item VALUES (?, zeroblob(8192))")
        #expect(sqliteError?.code == SQLITE_FULL)
        #expect(error.migration == MigrationReference(manager: "library", version: "1.1"))
        let rows = try small.read { try $0.scalar("SELECT count(*) FROM item", as: Int.self) }
        #expect(rows == 1)
        #expect(try small.readRecords()["library"]?.appliedVersions == ["1.0"])
    }
}
