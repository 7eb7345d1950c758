import StoreMigrations

/// The stores of a coordinator migrated to the version a test seeds at, for the test to insert
/// its rows and keys into before they are captured (``UpgradeTester/seed(at:into:_:)``).
public struct SeededStores: Sendable {
    /// The version the stores were migrated to.
    public let version: Version
    /// Where the stores are.
    public let location: StoreLocation
    let coordinator: MigrationCoordinator

    /// The store of the manager `manager`, as the factory made it.
    ///
    /// ```swift
    /// try stores.store("library", as: SQLiteStore.self).write { db in
    ///     try db.execute("INSERT INTO note(title) VALUES ('Drafts')")
    /// }
    /// ```
    ///
    /// - Throws: ``UpgradeTestingError`` when no manager of that name has a store of type `Store`.
    public func store<Store: MigrationStore>(_ manager: String, as type: Store.Type = Store.self) throws -> Store {
        guard let store = coordinator.registeredManagers.first(where: { $0.name == manager })?.store as? Store else {
            throw UpgradeTestingError(store: manager, reason: .noSuchStore(type: "\(Store.self)"))
        }
        return store
    }
}
