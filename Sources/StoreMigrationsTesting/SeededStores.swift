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

    /// Edits the preferences of the manager `manager` (a preferences file or a `UserDefaults`
    /// suite), keeping its records as they are.
    ///
    /// ```swift
    /// try stores.editPreferences("preferences") { defaults in
    ///     try defaults.set("title", for: "sortOrder")
    /// }
    /// ```
    ///
    /// A preferences store writes only when a transaction changes the records (a migration
    /// step); this writes the edit under a record of its own, then takes that record away again.
    ///
    /// - Throws: ``UpgradeTestingError`` when the manager's store does not hold preferences.
    public func editPreferences(_ manager: String, _ edit: (inout Preferences) throws -> Void) throws {
        guard let store = coordinator.registeredManagers.first(where: { $0.name == manager })?.store as? any MigrationStore<Preferences>
        else { throw UpgradeTestingError(store: manager, reason: .noSuchStore(type: "a store of Preferences")) }
        let marker = "StoreMigrationsTesting.seeding"
        try store.transaction { records, preferences in
            records[marker] = MigrationRecord(baseline: version)
            try edit(&preferences)
        }
        try store.transaction { records, _ in records[marker] = nil }
    }
}
