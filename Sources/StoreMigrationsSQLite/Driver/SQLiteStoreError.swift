import Foundation
import StoreMigrations

/// A ``SQLiteStore`` refused to go on with a step, a write or a launch: not an error SQLite
/// reported (those are ``SQLiteError``), but one of the store's own rules.
///
/// The message names the store, the migration when one was running, what happened and the one
/// thing to do about it:
///
/// ```swift
/// do {
///     try coordinator.run()
/// } catch let error as SQLiteStoreError {
///     if case let .transactionEnded(statement, _) = error.reason {
///         print("the step's transaction was ended by `\(statement)`")
///     }
/// }
/// ```
public struct SQLiteStoreError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// What the store refused.
    public enum Reason: Sendable, Hashable {
        /// A statement the body ran ended the store's transaction: `INSERT OR ROLLBACK`,
        /// `ON CONFLICT ROLLBACK`, a trigger's `RAISE(ROLLBACK)`, or SQLite's own rollback after
        /// `SQLITE_FULL`, `SQLITE_IOERR` or `SQLITE_NOMEM`. Every later statement of the body was
        /// refused, and nothing of the step was committed. `sqliteError` is the error the
        /// statement failed with, when it failed.
        case transactionEnded(statement: String, sqliteError: SQLiteError?)
        /// The database file exists but holds 0 bytes: its data is gone (truncated, or replaced by
        /// a failed copy), and migrating it would record levels over nothing.
        case emptyDatabaseFile
        /// The store was created ``SQLiteStore/Access/readOnly``: it plans, but runs no step and
        /// writes nothing.
        case readOnly
        /// A schema helper would break `dependent` (a trigger or a view), which reads `column` of
        /// `table`.
        case dependentSchemaObject(SchemaObject, column: String, table: String)
        /// A batch of a resumable migration ran `statement`, which changes the schema: batches
        /// must leave it alone, since a kill between two of them would leave the schema half
        /// changed for the rest of the data.
        case schemaChangeInBatch(statement: String)
        /// A row transform returned a value for `column` of `table`, which is not among the
        /// `listed` columns it may write; its transaction was rolled back.
        case unlistedColumn(column: String, table: String, listed: [String])
    }

    /// A trigger or a view that depends on a column.
    public enum SchemaObject: Sendable, Hashable, CustomStringConvertible {
        /// A trigger, by name.
        case trigger(String)
        /// A view, by name.
        case view(String)

        public var description: String {
            switch self {
            case let .trigger(name): return "trigger \"\(name)\""
            case let .view(name): return "view \"\(name)\""
            }
        }
    }

    /// What the store refused.
    public let reason: Reason
    /// The store, as its `description` names it.
    public let store: String
    /// The migration that was running, when there was one.
    public internal(set) var migration: MigrationReference?

    init(_ reason: Reason, store: String, migration: MigrationReference? = nil) {
        self.reason = reason
        self.store = store
        self.migration = migration
    }

    /// The message: what happened, where, and what to do.
    public var description: String {
        let during = migration.map { "Migration \($0)" } ?? "A write"
        switch reason {
        case let .transactionEnded(statement, sqliteError):
            let cause = sqliteError.map { " (\($0.message))" } ?? ""
            return "\(during) on \(store) ended its transaction with `\(statement)`\(cause). Every later "
                + "statement was refused and nothing of it was recorded or kept. Do not end the store's "
                + "transaction: use INSERT OR ABORT (the default) instead of OR ROLLBACK, RAISE(ABORT) "
                + "instead of RAISE(ROLLBACK), and let errors such as SQLITE_FULL through."
        case .emptyDatabaseFile:
            return "\(store) is an empty (0-byte) file: its data is gone. Nothing was migrated and the "
                + "file was left as it is. Restore it from a backup; delete it only to start over with "
                + "an empty database (its migrations then run again)."
        case .readOnly:
            return "\(migration.map { "Migration \($0)" } ?? "A write") was refused: \(store) "
                + "was opened read-only, which plans but never migrates. Create the store with "
                + "access: .readWrite to run migrations."
        case let .dependentSchemaObject(object, column, table):
            return "\(during) on \(store) would break \(object), which reads column \"\(column)\" of "
                + "table \"\(table)\". Nothing was changed. Drop or rewrite \(object) first, or pass "
                + "dependents: .drop to the helper."
        case let .unlistedColumn(column, table, listed):
            return "\(during) on \(store) returned a value for column \"\(column)\" of table \"\(table)\" from its "
                + "row transform, which lists only \(listed.joined(separator: ", ")); nothing of the transaction was kept. "
                + "List \"\(column)\" in the transform's columns."
        case let .schemaChangeInBatch(statement):
            return "\(during) on \(store) ran `\(statement)` in a batch; batches of a resumable migration "
                + "cannot change the schema, and the batch was rolled back. Make the change in an ordinary "
                + "migration registered before it."
        }
    }

    /// The same message as ``description``.
    public var errorDescription: String? { description }
}

extension SQLiteStoreError: MigrationAttributableError {
    package func attributed(to migration: MigrationReference) -> any Error {
        var error = self
        if error.migration == nil { error.migration = migration }
        return error
    }
}
