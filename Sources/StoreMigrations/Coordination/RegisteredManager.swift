/// A manager as the testing products see it: its name, the store it migrates (unwrapped from an
/// ``AnyMigrationStore``, so that a fixture kind recognises the concrete store) and the versions
/// registered so far, ascending. `StoreMigrationsTesting` captures, restores and compares stores
/// through it, and seeds a store at a version by targeting the highest one at or below it.
package struct RegisteredManager: Sendable {
    package let name: String
    package let store: any MigrationStore
    package let versions: [Version]
}

extension MigrationCoordinator {
    /// Every manager, in registration order.
    package var registeredManagers: [RegisteredManager] {
        managerList().map { manager in
            RegisteredManager(name: manager.name, store: manager.migratedStore, versions: manager.registeredVersions.sorted())
        }
    }
}

extension MigrationManager {
    /// The store, unwrapped from any ``AnyMigrationStore`` around it.
    var migratedStore: any MigrationStore {
        var unwrapped: any MigrationStore<Store.Content> = store
        while let wrapper = unwrapped as? AnyMigrationStore<Store.Content> { unwrapped = wrapper.base }
        return unwrapped
    }
    var registeredVersions: [Version] { lock.withLock { registrations.versions } }
}
