#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import StoreMigrations

/// What the store knows, while a body runs, about the transaction it opened for the body: armed
/// by ``Database/guardingTransaction(store:_:)``, it notes the statement that ended the
/// transaction and refuses every statement after it.
///
/// Why two mechanisms, each enough to keep a half step off the disk:
///
/// - **A commit hook that vetoes every commit** while the body runs. SQLite calls it for every
///   write transaction about to commit, whoever runs the statement: a ``Statement``, the
///   store's own record queries, or a body reaching SQLite's C API directly. Returning non-zero
///   turns the commit into a rollback (`SQLITE_CONSTRAINT_COMMITHOOK`). On its own it keeps
///   the disk clean, but it cannot name the statement that ended the transaction, and the body
///   goes on running statements that each fail with a puzzling "constraint failed".
/// - **GRDB's way**: after each statement that finishes (done or failed), ``Statement`` asks
///   SQLite whether the connection fell back to autocommit (`sqlite3_get_autocommit`, a field
///   read, so no cost per row: rows are not checked, only the end of each statement). The first
///   time it did, the statement is noted and a ``SQLiteStoreError/Reason/transactionEnded(statement:sqliteError:)``
///   thrown; from then on every statement is refused with the same error before it runs, so a
///   body that catches errors with `try?` learns nothing wrong and writes nothing, and the
///   store reports the statement that ended the transaction.
///
/// The authorizer of ``Database/denyingTransactionControl(_:)`` stays in front of both: it
/// refuses `BEGIN`, `COMMIT` and `ROLLBACK` written in the body before they run. Savepoints
/// are not transaction control to it, and stay usable: inside the store's transaction,
/// `RELEASE` of the body's savepoint never commits.
final class TransactionGuard {
    /// The store, for the error's message.
    let store: String
    /// Whether a statement ended the transaction. A flag apart from ``failure``, and the throwing
    /// paths out of line: every statement start and end reads it, where testing or passing an
    /// optional error would slow every row transform (see BENCHMARKS.md).
    /// Read as every statement starts and finishes; a connection is used by one thread at a time.
    @exclusivity(unchecked) private(set) var hasEnded = false
    /// The error that stopped the body, once a statement ended the transaction.
    private(set) var failure: SQLiteStoreError?

    init(store: String) {
        self.store = store
    }

    /// Throws the guard's error if a statement already ended the transaction.
    @inline(__always)
    func checkOpen() throws {
        if hasEnded { try throwFailure() }
    }

    /// Called when `sql` finished on `handle` without an error: throws when the transaction is
    /// gone (a commit or rollback that SQLite ran without failing the statement).
    @inline(__always)
    func statementDone(_ sql: @autoclosure () -> String, on handle: OpaquePointer) throws {
        guard !hasEnded, sqlite3_get_autocommit(handle) != 0 else { return }
        try transactionEnded(by: sql(), error: nil)
    }

    /// Called when `sql` failed on `handle` with `error`: throws the guard's error instead when
    /// the failure ended the transaction (`OR ROLLBACK`, `SQLITE_FULL`…).
    func statementFailed(_ sql: String, on handle: OpaquePointer, error: SQLiteError) throws {
        guard !hasEnded, sqlite3_get_autocommit(handle) != 0 else { return }
        try transactionEnded(by: sql, error: error)
    }

    @inline(never)
    private func throwFailure() throws {
        if let failure { throw failure }
    }

    @inline(never)
    private func transactionEnded(by sql: String, error: SQLiteError?) throws {
        let failure = SQLiteStoreError(.transactionEnded(statement: sql, sqliteError: error), store: store)
        self.failure = failure
        hasEnded = true
        throw failure
    }
}

extension Database {
    /// What the error names when the transaction ended by a statement that did not go through
    /// ``Statement`` (SQLite's C API called directly).
    private static let unseenStatement = "a statement run outside Database and Statement"

    /// Runs `body` (a migration body, or the body of ``SQLiteStore/write(_:)``) inside the
    /// transaction the store opened, so that no statement can commit while it runs; see
    /// ``TransactionGuard``. Throws ``SQLiteStoreError`` naming the statement that ended the
    /// transaction, whether `body` returned or threw, since the body's own error comes after it.
    func guardingTransaction<T>(store: String, denyingSchemaChanges: Bool = false, _ body: () throws -> T) throws -> T {
        let guarding = TransactionGuard(store: store)
        let deniedSchemaChanges = authorizer.deniesSchemaChanges
        authorizer.deniesSchemaChanges = denyingSchemaChanges
        authorizer.denied = nil
        defer { authorizer.deniesSchemaChanges = deniedSchemaChanges }
        let outer = transactionGuard
        transactionGuard = guarding
        // Any non-zero return turns the commit into a rollback.
        sqlite3_commit_hook(handle, { _ in 1 }, nil)
        defer {
            transactionGuard = outer
            if outer == nil { sqlite3_commit_hook(handle, nil, nil) }
        }
        let result: T
        do {
            result = try denyingTransactionControl { try body() }
        } catch {
            try guarding.checkOpen()
            try guarding.statementDone(Self.unseenStatement, on: handle)
            if let error = error as? SQLiteError, error.code == SQLITE_AUTH, let denied = authorizer.denied,
               Authorizer.changesSchema(denied) {
                throw SQLiteStoreError(.schemaChangeInBatch(statement: error.sql ?? "?"), store: store)
            }
            throw error
        }
        try guarding.checkOpen()
        try guarding.statementDone(Self.unseenStatement, on: handle)
        return result
    }

    /// Runs `body` with schema changes allowed, inside a batch that denies them to its body: for
    /// the library's own resumable forms, whose schema changes commit with their first or last
    /// batch. Never handed to a migration body.
    func allowingSchemaChanges<T>(_ body: () throws -> T) rethrows -> T {
        let denied = authorizer.deniesSchemaChanges
        authorizer.deniesSchemaChanges = false
        defer { authorizer.deniesSchemaChanges = denied }
        return try body()
    }
}
