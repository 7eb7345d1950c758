/// Whether a migration runs inside its store's transaction.
///
/// ```swift
/// library.register("2.1", transaction: .none) { db in try db.execute("VACUUM") }
/// ```
public enum TransactionMode: String, Sendable, Hashable, Codable {
    /// The body runs inside the store's transaction, committed with the record or not at all:
    /// exactly once (the default).
    case transactional
    /// The body runs outside any transaction, for statements a transaction refuses (SQLite's
    /// `VACUUM`, PostgreSQL's `CREATE INDEX CONCURRENTLY`); the store still excludes other
    /// processes while it runs and records it afterwards. If the process dies between the body
    /// and the record, the body runs again: **at least once**, so write it to be repeatable.
    /// Stores that cannot run such a step refuse it with
    /// ``MigrationError/transactionModeNotSupported(migration:store:)``.
    case none
}
