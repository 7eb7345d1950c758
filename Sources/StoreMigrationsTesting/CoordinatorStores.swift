import StoreMigrations

/// A coordinator's managers grouped by the store they share (by identity), in registration
/// order: the unit a fixture captures and an upgrade check compares.
struct CoordinatorStores {
    struct Group {
        let managers: [RegisteredManager]
        var store: any MigrationStore { managers[0].store }
        var names: [String] { managers.map(\.name) }
        var label: String { names.joined(separator: ", ") }
    }

    let groups: [Group]

    init(_ coordinator: MigrationCoordinator) {
        var order: [StoreIdentity] = []
        var members: [StoreIdentity: [RegisteredManager]] = [:]
        for manager in coordinator.registeredManagers {
            let identity = manager.store.identity
            if members[identity] == nil { order.append(identity) }
            members[identity, default: []].append(manager)
        }
        groups = order.map { Group(managers: members[$0] ?? []) }
    }

    /// The group whose first manager is `name`.
    func group(named name: String) -> Group? {
        groups.first { $0.managers[0].name == name }
    }

    /// The group holding the manager `name`.
    func group(holding name: String) -> Group? {
        groups.first { $0.names.contains(name) }
    }
}
