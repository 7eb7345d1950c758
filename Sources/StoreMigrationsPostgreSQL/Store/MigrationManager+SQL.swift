import Foundation
import StoreMigrations

extension MigrationManager where Store == PostgreSQLStore {
    /// Registers the migration to `version` as SQL text, which may hold several statements. Its
    /// fingerprint is the text (unless `options` gives one), so a plan reports the migration if
    /// the text is edited after it ran (``/StoreMigrations/MigrationFingerprint``).
    /// A `-- store-migrations:` directive in the text is read from files only
    /// (`registerSQLFiles(in:)`): here it is an ordinary comment, and the text runs in the store's
    /// transaction.
    ///
    /// ```swift
    /// library.register("1.1", options: .named("add guid"), sql: "ALTER TABLE event ADD COLUMN guid uuid")
    /// ```
    public func register(
        _ version: Version, dependsOn dependencies: [MigrationReference] = [], options: MigrationOptions = MigrationOptions(),
        sql: String
    ) {
        register(version, dependsOn: dependencies, options: options, sql: sql, execute: { db, sql in try db.execute(sql) })
    }

    /// Registers every migration file of `folder`: `V<version>__<name>.sql`, each a migration
    /// with the file's version and name, and its text as SQL and fingerprint; a file whose
    /// directive says `-- store-migrations: no-transaction` runs outside the store's transaction
    /// (``/StoreMigrations/SQLMigrationFile`` describes the naming and the directive).
    ///
    /// ```swift
    /// // migrations/V1.0__create_notes.sql, migrations/V1.1__add_guid.sql
    /// try library.registerSQLFiles(in: URL(fileURLWithPath: "migrations"))
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
