import Foundation
import StoreMigrations
import StoreMigrationsSQLite
#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif

/// The SQLite store's transaction guard (`Database+TransactionGuard.swift`, `Statement.step()`)
/// rebuilt on SQLite's C API, so that a C-API loop pays what the library's guard adds to a
/// migration body, and the loop with and without it measure the guard's cost in one run (the
/// library's internals are not reachable from here).
///
/// For the length of a body the store installs a commit hook that vetoes every commit, and the
/// authorizer that refuses `BEGIN`, `COMMIT` and `ROLLBACK` (consulted only while a statement
/// compiles): ``arm()`` and ``disarm()``. Per statement, ``RawSQLite/step(_:sql:starting:guardedBy:)``
/// does what `Statement.step()` does: ``checkOpen()`` before the first step of a run, then
/// ``statementDone(_:)`` after the step that ends it, or, out of line, ``statementFailed(_:error:)``
/// with the library's error type when it failed; rows after a run's first cost nothing. The
/// checks read a flag and keep the throwing paths out of line, as the library's do: testing and
/// passing optional errors of the library's types per statement cost 574 instructions a row
/// (5.3% of the plain loop, callgrind, 100,000 rows) before the library changed to the flag (see
/// BENCHMARKS.md). It mirrors the library's code line for line: when that changes, change this
/// with it.
final class RawTransactionGuard {
    private let handle: OpaquePointer?
    /// What the guard holds once a statement ended the transaction: an error of this kind made by
    /// the store's own guard (``LibraryErrors``), since the library's initializers are internal.
    private let ended: SQLiteStoreError
    /// As in the library: read as every statement starts and finishes, by one thread.
    @exclusivity(unchecked) private(set) var hasEnded = false
    private(set) var failure: SQLiteStoreError?
    /// The statement that ended the transaction (the library's error names it).
    private(set) var endedBy: String?
    /// The error a failed step passes on (see ``ended``); its message is SQLite's own when thrown.
    let stepFailure: SQLiteError

    init(handle: OpaquePointer?, errors: LibraryErrors) {
        self.handle = handle
        ended = errors.transactionEnded
        stepFailure = errors.statementFailed
    }

    /// Installs the commit hook and the authorizer, as `guardingTransaction` and
    /// `denyingTransactionControl` do when a body starts.
    func arm() {
        sqlite3_commit_hook(handle, { _ in 1 }, nil)
        sqlite3_set_authorizer(handle, { _, action, _, _, _, _ in
            action == SQLITE_TRANSACTION ? SQLITE_DENY : SQLITE_OK
        }, nil)
    }

    /// The end of a body: the final check `guardingTransaction` makes, then both removed.
    func disarm() throws {
        defer {
            sqlite3_set_authorizer(handle, nil, nil)
            sqlite3_commit_hook(handle, nil, nil)
        }
        try checkOpen()
        try statementDone("a statement run outside the loop")
    }

    @inline(__always)
    func checkOpen() throws {
        if hasEnded { try throwFailure() }
    }

    @inline(__always)
    func statementDone(_ sql: String) throws {
        guard !hasEnded, sqlite3_get_autocommit(handle) != 0 else { return }
        try transactionEnded(by: sql, error: nil)
    }

    func statementFailed(_ sql: String, error: SQLiteError) throws {
        guard !hasEnded, sqlite3_get_autocommit(handle) != 0 else { return }
        try transactionEnded(by: sql, error: error)
    }

    @inline(never)
    private func throwFailure() throws {
        if let failure { throw failure }
    }

    @inline(never)
    private func transactionEnded(by sql: String, error: SQLiteError?) throws {
        endedBy = sql
        let failure = ended
        self.failure = failure
        hasEnded = true
        throw failure
    }

    /// Errors of the library's types, made by the library's guard itself: a write whose
    /// `INSERT OR ROLLBACK` ends the transaction.
    struct LibraryErrors {
        let transactionEnded: SQLiteStoreError
        let statementFailed: SQLiteError
        /// The statement that ended the transaction.
        static let endingStatement = "INSERT OR ROLLBACK INTO t VALUES (1)"

        init(directory: URL) throws {
            let store = SQLiteStore(url: directory.appendingPathComponent("guard.sqlite"))
            do {
                try store.write { db in
                    try db.execute("CREATE TABLE t(x UNIQUE); INSERT INTO t VALUES (1); \(Self.endingStatement)")
                }
                preconditionFailure("the store's guard let a write end its transaction")
            } catch let error as SQLiteStoreError {
                guard case let .transactionEnded(statement, sqliteError?) = error.reason,
                    statement == Self.endingStatement
                else { preconditionFailure("the store's guard reported \(error)") }
                transactionEnded = error
                statementFailed = sqliteError
            }
        }
    }

    /// Checks, outside any timing, that the rebuilt guard does what the store's does: it notices
    /// the statement the store's guard noticed, then refuses every statement; the authorizer
    /// refuses to compile a `COMMIT`; one that compiles anyway (authorizer lifted) is vetoed by the
    /// hook, which rolls the transaction back.
    static func selfTest(errors: LibraryErrors) throws {
        let db = try RawSQLite(path: ":memory:")
        try db.execute("CREATE TABLE t(x UNIQUE); BEGIN IMMEDIATE; INSERT INTO t VALUES (1)")
        var guarding = RawTransactionGuard(handle: db.handle, errors: errors)
        guarding.arm()
        let ending = try db.prepare(LibraryErrors.endingStatement)
        defer { sqlite3_finalize(ending) }
        precondition((try? db.step(ending, sql: LibraryErrors.endingStatement, starting: true, guardedBy: guarding)) == nil)
        precondition(guarding.endedBy == LibraryErrors.endingStatement, "the guard did not notice the rollback")
        precondition((try? guarding.checkOpen()) == nil, "the guard let a statement run after the transaction ended")
        try? guarding.disarm()

        try db.execute("BEGIN IMMEDIATE; INSERT INTO t VALUES (2)")
        guarding = RawTransactionGuard(handle: db.handle, errors: errors)
        guarding.arm()
        precondition((try? db.prepare("COMMIT")) == nil, "the authorizer let a COMMIT compile")
        sqlite3_set_authorizer(db.handle, nil, nil)
        let commit = try db.prepare("COMMIT")
        defer { sqlite3_finalize(commit) }
        precondition((try? db.step(commit, sql: "COMMIT", starting: true, guardedBy: guarding)) == nil)
        precondition(guarding.endedBy == "COMMIT", "the commit hook did not veto the commit")
        try? guarding.disarm()
        let count = try db.scalarText("SELECT count(*) FROM t")
        precondition(count == "0", "a vetoed commit wrote its row")
    }
}

extension RawSQLite {
    /// One step of `statement` (`sql`) with the guard's per-statement checks, as `Statement.step()`
    /// makes them: `starting` says the step is the first of a run (the library checks the guard
    /// there only).
    func step(_ statement: OpaquePointer?, sql: String, starting: Bool, guardedBy guarding: RawTransactionGuard) throws -> Bool {
        if starting { try guarding.checkOpen() }
        let status = sqlite3_step(statement)
        if status == SQLITE_ROW { return true }
        guard status == SQLITE_DONE else { throw try failure(sql: sql, guardedBy: guarding) }
        try guarding.statementDone(sql)
        return false
    }

    /// As `Statement.failure(of:)`: out of line, and the guard's error first.
    @inline(never)
    private func failure(sql: String, guardedBy guarding: RawTransactionGuard) throws -> RawSQLiteError {
        try guarding.statementFailed(sql, error: guarding.stepFailure)
        return RawSQLiteError(message: String(cString: sqlite3_errmsg(handle)))
    }
}

extension Timer {
    /// ``compare(measuringMemory:prepareLibrary:library:prepareBaseline:baseline:)`` with a second
    /// baseline: the three take turns run by run after a warm-up round, the two baselines in
    /// alternating order, so that neither always runs right after the library.
    func compare(
        measuringMemory: Bool = false,
        prepareLibrary: () throws -> Void, library: () throws -> Void,
        prepareBaseline: () throws -> Void, baseline: () throws -> Void,
        prepareSecond: () throws -> Void, second: () throws -> Void
    ) throws -> (library: Samples, baseline: Samples, second: Samples) {
        var librarySamples = Samples(measuringMemory: measuringMemory)
        var baselineSamples = Samples(measuringMemory: measuringMemory)
        var secondSamples = Samples(measuringMemory: measuringMemory)
        for round in 0...runs {
            try prepareLibrary()
            try librarySamples.measure(library)
            for turn in round.isMultiple(of: 2) ? [0, 1] : [1, 0] {
                if turn == 0 {
                    try prepareBaseline()
                    try baselineSamples.measure(baseline)
                } else {
                    try prepareSecond()
                    try secondSamples.measure(second)
                }
            }
        }
        return (librarySamples, baselineSamples, secondSamples)
    }
}
