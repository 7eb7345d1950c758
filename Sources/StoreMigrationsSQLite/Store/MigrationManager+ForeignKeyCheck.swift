import Foundation
import StoreMigrations

extension MigrationManager where Store == SQLiteStore {
    /// Registers the migration to `version` with a foreign-key check of its own, rather than the
    /// store's ``SQLiteStore/foreignKeyCheck``.
    ///
    /// ```swift
    /// // The store checks the whole database after each step (.deferred); this table is too
    /// // large for that, and its step writes rows in dependency order:
    /// library.register("2.1", foreignKeyCheck: .immediate) { db in
    ///     try db.execute("INSERT INTO author(id, name) SELECT DISTINCT author_id, author_name FROM book")
    ///     try db.execute("UPDATE book SET author_ref = author_id")
    /// }
    /// ```
    ///
    /// The check is set on the connection before the step's transaction begins (SQLite ignores
    /// `PRAGMA foreign_keys` inside one), so it holds for the whole body. It belongs to this
    /// registration: another coordinator registering the same migration without it gets the
    /// store's check.
    public func register(
        _ version: Version, dependsOn dependencies: [MigrationReference] = [],
        foreignKeyCheck: SQLiteStore.ForeignKeyCheck, _ body: @escaping Body
    ) {
        register(version, dependsOn: dependencies, options: MigrationOptions(ForeignKeyCheckOption.self, foreignKeyCheck), body)
    }

    /// Registers the migration to `version` with a foreign-key check of its own and a body that
    /// also receives its ``/StoreMigrations/MigrationContext``.
    ///
    /// ```swift
    /// library.register("2.1", foreignKeyCheck: .immediate) { db, context in
    ///     try db.execute("UPDATE book SET author_ref = author_id")
    ///     context.reportProgress(1)
    /// }
    /// ```
    public func register(
        _ version: Version, dependsOn dependencies: [MigrationReference] = [],
        foreignKeyCheck: SQLiteStore.ForeignKeyCheck, _ body: @escaping BodyWithContext
    ) {
        register(version, dependsOn: dependencies, options: MigrationOptions(ForeignKeyCheckOption.self, foreignKeyCheck), body)
    }
}

/// A migration's own foreign-key check, set by
/// ``MigrationManager/register(_:dependsOn:foreignKeyCheck:_:)`` and read by the store's transaction.
enum ForeignKeyCheckOption: MigrationOption {
    typealias Value = SQLiteStore.ForeignKeyCheck
}
