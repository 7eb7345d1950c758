import Foundation
import StoreMigrations

extension MigrationManager where Store == SQLiteStore {
    /// Registers the migration to `version` as SQL text, whose statements run one after the
    /// other in the step's `BEGIN IMMEDIATE` transaction, foreign keys checked before its commit.
    /// The text is its fingerprint unless `options` gives one: a plan reports the migration
    /// edited after it ran (``/StoreMigrations/MigrationFingerprint``). A
    /// `-- store-migrations:` directive is read from files only (`registerSQLFiles(in:)`): in
    /// this text it is a comment.
    ///
    /// ```swift
    /// library.register("1.1", options: .named("add guid"), sql: "ALTER TABLE event ADD COLUMN guid TEXT")
    /// ```
    public func register(
        _ version: Version, dependsOn dependencies: [MigrationReference] = [], options: MigrationOptions = MigrationOptions(),
        sql: String
    ) {
        register(version, dependsOn: dependencies, options: options, sql: sql, execute: { db, sql in try db.execute(sql) })
    }

    /// Registers every `V<version>__<name>.sql` file of `folder`, in the app's bundle say, as a
    /// migration of that version and name, its text the SQL and the fingerprint
    /// (``/StoreMigrations/SQLMigrationFile``). A file whose directive says
    /// `-- store-migrations: no-transaction` (a `VACUUM`, say) runs outside a transaction,
    /// under the store's lock file.
    ///
    /// ```swift
    /// // migrations/V1.0__create_notes.sql, migrations/V1.1__add_guid.sql
    /// try library.registerSQLFiles(in: Bundle.main.url(forResource: "migrations", withExtension: nil)!)
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
