import Foundation

extension MigrationManager {
    /// Registers the migration to `version` as SQL text that `execute` runs on the store's
    /// content, fingerprinted by the text unless `options` gives a fingerprint: the one
    /// implementation behind the SQL stores' `register(_:dependsOn:options:sql:)`. Inlinable, as
    /// registering is, so that the store products' calls are specialized for their store types.
    /// The text is kept as it is, neither captured by a closure nor copied into the options
    /// (each an allocation a registration, and a release when the manager goes).
    @inlinable
    package func register(
        _ version: Version, dependsOn dependencies: [MigrationReference], transaction: TransactionMode = .transactional,
        options: MigrationOptions, sql: String, execute: @escaping @Sendable (Store.Content, String) throws -> Void
    ) where Store.Content: AnyObject {
        append(version, dependencies, transaction, options, .sql(sql, execute: execute))
    }

    /// Registers every migration file of `folder` with `execute`: the one implementation behind
    /// the SQL stores' `registerSQLFiles(in:)`.
    package func registerSQLFiles(
        in folder: URL, execute: @escaping @Sendable (Store.Content, String) throws -> Void
    ) throws -> [SQLMigrationFile] where Store.Content: AnyObject {
        let files = try SQLMigrationFile.files(in: folder, manager: name, store: store.description)
        for file in files {
            var options = MigrationOptions()
            options.name = file.name
            register(
                file.version, dependsOn: [], transaction: file.transaction, options: options, sql: file.sql, execute: execute)
        }
        return files
    }
}
