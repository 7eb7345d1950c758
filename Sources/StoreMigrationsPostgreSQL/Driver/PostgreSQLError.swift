import Foundation
import StoreMigrations

/// An error from a ``PostgreSQLStore`` or its ``PostgreSQLConnection``: what failed, the
/// server's SQLSTATE, message, detail and hint when the server sent them, the statement, the
/// store, the migration step when one was running, and what to do.
///
/// ```swift
/// do {
///     try coordinator.run()
/// } catch let error as MigrationRunError {
///     if let failure = error.report.failures.first?.error as? PostgreSQLError,
///        failure.sqlState == "42P07" {
///         print(failure.message, failure.sql ?? "")   // relation "…" already exists
///     }
/// }
/// ```
///
/// When a step fails, its transaction is rolled back: the data, the schema and the records are
/// as they were before the step (a ``/StoreMigrations/TransactionMode/none`` step's body may have run in part).
public struct PostgreSQLError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// What went wrong.
    public enum Kind: Sendable, Hashable {
        /// The connection string or parameters do not parse, or libpq refuses an option's value
        /// (`sslmode=bogus`, `port=abc`) before reaching any server.
        case invalidConnectionString
        /// The server could not be reached, refused the connection, or refused to log in
        /// (wrong password: SQLSTATE `28P01`; missing database: `3D000`).
        case connectionFailed
        /// The connection broke while in use (server restarted or stopped, network cut): the
        /// statement's transaction was rolled back by the server.
        case connectionLost
        /// The server refused a statement; ``PostgreSQLError/sqlState`` says why.
        case statementFailed
        /// Another session held the store's advisory lock past the store's lock timeout.
        /// `holderPID` is that session's server process id, read from `pg_locks`, when it could be.
        case lockTimeout(holderPID: Int32?)
        /// A statement of the step waited for a table lock longer than the store's lock timeout
        /// in each of its `attempts` (see ``PostgreSQLStore/LockRetries``; row locks are waited
        /// for without a bound).
        /// `blockerPID` and `blockerQuery` are the server process that held the lock and its
        /// query (its last one, when it sits idle in a transaction), from `pg_blocking_pids` and
        /// `pg_stat_activity`, when a second session could see them.
        case tableLockTimeout(blockerPID: Int32?, blockerQuery: String?, attempts: Int)
        /// A table the store keeps its records in exists with columns the store does not know.
        case foreignStoreTable(table: String)
        /// A value read from a row does not convert to the type asked for.
        case valueConversion
        /// The store or connection was used in a way it does not allow (a body ending the
        /// step's transaction, a transaction opened inside a non-transactional step, …).
        case misuse
        /// A batch of a resumable migration
        /// (``/StoreMigrations/MigrationManager/registerResumable(_:dependsOn:batchSize:deferred:options:_:)``)
        /// changed the schema: created, altered or dropped something other than a temporary
        /// object. ``PostgreSQLError/sql`` is the statement, when one statement did it; the
        /// batch was rolled back.
        case schemaChangeInBatch
        /// A row transform returned a value for `column` of `table`, which is not among the
        /// columns it may write; the transaction was rolled back.
        case unlistedColumn(table: String, column: String)
    }

    /// What went wrong.
    public let kind: Kind
    /// The server's five-character SQLSTATE (`"42P07"`, `"28P01"`, `"57P01"`, …), when it sent one.
    public let sqlState: String?
    /// The server's or libpq's primary message, or this wrapper's.
    public let message: String
    /// The server's detail line, when it sent one.
    public let detail: String?
    /// The server's hint, when it sent one.
    public let hint: String?
    /// The statement that failed, when a statement failed.
    public let sql: String?
    /// The store, as ``PostgreSQLStore/description`` names it (never with a password).
    public let store: String
    /// The migration step that was running, once the coordinator knows it.
    public let migration: MigrationReference?

    /// Creates an error; only the library's connections and stores make them.
    init(
        kind: Kind, sqlState: String? = nil, message: String, detail: String? = nil, hint: String? = nil,
        sql: String? = nil, store: String, migration: MigrationReference? = nil
    ) {
        self.kind = kind
        self.sqlState = sqlState
        self.message = message
        self.detail = detail
        self.hint = hint
        self.sql = sql
        self.store = store
        self.migration = migration
    }

    /// The message: what failed, where, the server's words, and what to do.
    public var description: String {
        var text: String
        switch kind {
        case .invalidConnectionString:
            text = "The connection string of \(store) is not valid: \(message)."
        case .connectionFailed:
            text = "Could not connect to \(store): \(message)"
            // libpq's own sentences may end in their punctuation already.
            if !message.hasSuffix("."), !message.hasSuffix("?") { text += "." }
        case .connectionLost:
            text = "The connection to \(store) was lost: \(message)."
        case .statementFailed:
            text = "\(store) refused a statement: \(message)."
        case .lockTimeout(let holder):
            text = "Timed out waiting for the migration lock of \(store): \(message)"
                + (holder.map { "; it is held by the server process \($0) (pg_locks)" } ?? "") + "."
        case .tableLockTimeout(let pid, let query, let attempts):
            text = "A statement on \(store) waited for a table lock longer than the lock timeout in each of \(attempts) "
                + "attempt\(attempts == 1 ? "" : "s"): \(message)"
            if let pid {
                text += "; the lock is held by the server process \(pid)"
                if let query { text += ", running `\(Self.abbreviated(query))`" }
            }
            text += "."
        case .foreignStoreTable(let table):
            text = "\(store) has a table \(table) that is not a StoreMigrations record table: \(message)."
        case .valueConversion:
            text = "A value read from \(store) does not convert: \(message)."
        case .misuse:
            text = "\(store) was misused: \(message)."
        case let .unlistedColumn(table, column):
            text = "A row transform on \(store) returned a value for column \(column) of table \(table): \(message)."
        case .schemaChangeInBatch:
            text = "A batch of a resumable migration on \(store) changed the schema: \(message)."
        }
        if let migration { text += " Migration: \(migration)." }
        if let sqlState { text += " SQLSTATE \(sqlState)." }
        if let detail { text += " Detail: \(detail)." }
        if let hint { text += " Hint: \(hint)." }
        if let sql { text += " Statement: \(Self.abbreviated(sql))." }
        return text + " " + action
    }

    /// The same message as ``description``.
    public var errorDescription: String? { description }

    /// What to do about it.
    public var action: String {
        switch kind {
        case .invalidConnectionString:
            return "Nothing was changed. Fix the connection string: the option the message names, or its "
                + "form (key=value pairs, or a postgresql:// URI)."
        case .connectionFailed:
            switch sqlState {
            case "28P01":
                return "Nothing was changed. Check the user and password the store connects with."
            case "28000" where message.contains("role \""):
                return "Nothing was changed. Connect as an existing role, or create this one (CREATE ROLE … LOGIN)."
            case "28000":
                return "Nothing was changed. Allow this host, user and database in the server's pg_hba.conf."
            case "3D000":
                return "Nothing was changed. Create the database (CREATE DATABASE), or fix its name."
            default:
                return "Nothing was changed. Check that the server runs and that the host and port are right."
            }
        case .connectionLost:
            return "The step's transaction was rolled back; run the migrations again once the server is back."
        case .statementFailed:
            return migration == nil
                ? "Fix the statement; its transaction was rolled back."
                : "Fix the migration; its step was rolled back with its schema changes and nothing was recorded."
        case .lockTimeout:
            return "Nothing was changed. Another replica is migrating this database: wait for it, or raise the store's lockTimeout."
        case .tableLockTimeout(let pid, _, _):
            return "The step was rolled back and nothing was recorded: run the migrations again once "
                + (pid.map { "the server process \($0)" } ?? "the session holding the lock") + " has finished its query."
        case .foreignStoreTable:
            return "Nothing was changed. Rename or drop that table, or give the store another schema."
        case .valueConversion:
            return "Read the column as the type it holds, or as an optional when it may be NULL."
        case .misuse:
            return "Leave the step's transaction to the store; nothing was recorded."
        case .unlistedColumn(_, let column):
            return "Its transaction was rolled back and nothing was recorded. List \(column) in the transform's columns."
        case .schemaChangeInBatch:
            return "Batches must leave the schema alone, so the batch was rolled back and its progress not recorded: "
                + "make the change in an ordinary migration registered before this one (temporary tables are allowed)."
        }
    }

    /// The error, naming `migration`.
    func naming(_ migration: MigrationReference) -> PostgreSQLError {
        guard self.migration == nil else { return self }
        return PostgreSQLError(
            kind: kind, sqlState: sqlState, message: message, detail: detail, hint: hint, sql: sql,
            store: store, migration: migration)
    }

    private static func abbreviated(_ sql: String) -> String {
        let flat = sql.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
        return flat.count > 300 ? String(flat.prefix(300)) + "…" : flat
    }
}

extension PostgreSQLError: MigrationAttributableError {
    package func attributed(to migration: MigrationReference) -> any Error { naming(migration) }
}
