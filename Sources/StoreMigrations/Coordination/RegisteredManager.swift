/// A manager as the testing products see it: its name, the store it migrates (unwrapped from an
/// ``AnyMigrationStore``, so that a fixture kind recognises the concrete store) and the versions
/// registered so far, ascending. `StoreMigrationsTesting` captures, restores and compares stores
/// through it, and seeds a store at a version by targeting the highest one at or below it.
package struct RegisteredManager: Sendable {
    package let name: String
    package let store: any MigrationStore
    package let versions: [Version]
}

/// A store that forwards to another: the one a fixture kind must look at.
package protocol ForwardingStore {
    var forwardedStore: any MigrationStore { get }
}

extension AnyMigrationStore: ForwardingStore {
    package var forwardedStore: any MigrationStore { base }
}

extension MigrationCoordinator {
    /// Every manager, in registration order.
    package var registeredManagers: [RegisteredManager] {
        managerList().map { manager in
            var store = manager.migratedStore
            while let forwarding = store as? any ForwardingStore { store = forwarding.forwardedStore }
            return RegisteredManager(name: manager.name, store: store, versions: manager.registeredVersions.sorted())
        }
    }
}

extension MigrationManager {
    var migratedStore: any MigrationStore { store }
    var registeredVersions: [Version] { lock.withLock { registrations.versions } }
}
