import Foundation
import StoreMigrations

/// Why a manager that creates new databases from its declared schema
/// (``StoreMigrations/MigrationManager/createNewDatabasesFromSchema(historyData:)``) cannot replace
/// its history. A plan or run throws it before anything runs, on every store of the manager,
/// whichever path the store would take.
///
/// ```swift
/// do {
///     try coordinator.run()
/// } catch let error as SchemaCreationError {
///     print(error)   // "Manager "library" on /…/library.sqlite creates new databases from …"
/// }
/// ```
public enum SchemaCreationError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// The manager's last migration, `migration`, was not registered with a declared schema
    /// (``StoreMigrations/MigrationManager/register(_:dependsOn:options:schema:dataLoss:mappings:)``),
    /// so there is no schema to create new databases from.
    case lastMigrationNotDeclared(manager: String, store: String, migration: Version)
    /// The history has a post-deploy migration: a creation replacing it would wait for the
    /// deployment as it does, and a new database would have no tables until then.
    case replacesPostDeployMigration(manager: String, store: String, migration: Version)
    /// The history has a resumable migration: a creation replacing it would be deferred or
    /// batched as it is, and a new database could start without its tables.
    case replacesResumableMigration(manager: String, store: String, migration: Version)

    public var description: String {
        switch self {
        case let .lastMigrationNotDeclared(manager, store, migration):
            return "Manager \"\(manager)\" on \(store) creates new databases from its declared schema, but its "
                + "last migration \(manager)@\(migration) is not a declared schema. Nothing was migrated. "
                + "Register \(manager)@\(migration) with register(_:schema:)."
        case let .replacesPostDeployMigration(manager, store, migration):
            return "Manager \"\(manager)\" on \(store) creates new databases from its declared schema, but "
                + "\(manager)@\(migration) in its history is post-deploy, and a new database would wait for the "
                + "deployment to get its tables. Nothing was migrated. Squash the migrations after "
                + "\(manager)@\(migration) with squash(from:through:) instead of createNewDatabasesFromSchema."
        case let .replacesResumableMigration(manager, store, migration):
            return "Manager \"\(manager)\" on \(store) creates new databases from its declared schema, but "
                + "\(manager)@\(migration) in its history is resumable, and a new database could start before its "
                + "batches are done. Nothing was migrated. Squash the migrations after \(manager)@\(migration) with "
                + "squash(from:through:) instead of createNewDatabasesFromSchema."
        }
    }

    public var errorDescription: String? { description }
}
