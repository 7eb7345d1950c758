import Foundation
import StoreMigrations

extension MigrationManager where Store == PostgreSQLStore {
    /// Registers the migration to `version` as SQL text, sent to the server as one simple query
    /// (several statements allowed) in the step's transaction, under the store's advisory lock.
    /// The text is its fingerprint unless `options` gives one: a plan reports the migration
    /// edited after it ran (``/StoreMigrations/MigrationFingerprint``).
    /// Text that cannot run in a transaction (`CREATE INDEX CONCURRENTLY`) goes in a file with the
    /// `no-transaction` directive, read by `registerSQLFiles(in:)` only: here it is a comment.
    ///
    /// ```swift
    /// accounts.register("1.1", options: .named("add guid"), sql: "ALTER TABLE account ADD guid uuid")
    /// ```
    public func register(
        _ version: Version, dependsOn dependencies: [MigrationReference] = [], options: MigrationOptions = MigrationOptions(),
        sql: String
    ) {
        register(version, dependsOn: dependencies, options: options, sql: sql, execute: { db, sql in try db.execute(sql) })
    }

    /// Registers every `V<version>__<name>.sql` file of `folder` as a migration of that version
    /// and name, its text the SQL and the fingerprint (``/StoreMigrations/SQLMigrationFile``). A
    /// file whose directive says `-- store-migrations: no-transaction` runs outside a transaction,
    /// under the store's session lock: at least once, so write it to be run again
    /// (`CREATE INDEX CONCURRENTLY IF NOT EXISTS`).
    ///
    /// ```swift
    /// // migrations/V1.0__create_accounts.sql, migrations/V1.1__index_emails.sql
    /// try accounts.registerSQLFiles(in: URL(fileURLWithPath: "migrations"))
    /// ```
    ///
    /// - Returns: The files registered, ascending by version.
    /// - Throws: ``/StoreMigrations/SQLMigrationFileError`` naming a file that cannot be
    ///   registered and how to fix it; nothing of the folder is registered then.
    @discardableResult
    public func registerSQLFiles(in folder: URL) throws -> [SQLMigrationFile] {
        try registerSQLFiles(in: folder, execute: { db, sql in try db.execute(sql) })
    }
}
