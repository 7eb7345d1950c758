/// A manager as the graph, the planner and the scheduler see it: its migrations sorted by
/// version, its policies, and closures that reach its store without knowing the store's type.
/// A class, so that running a step does not copy its many closures.
final class ManagerDefinition: Sendable {
    let name: String
    let storeID: ObjectIdentifier
    let storeDescription: String
    let isRebuildable: Bool
    /// Ascending; the position of a version is its index in ``dependencies`` and ``apply``.
    let versions: [Version]
    let dependencies: [[MigrationReference]]
    let newerStorePolicy: NewerStorePolicy
    let hook: (@Sendable (Version?, Version) throws -> Void)?

    /// Reads the states of every manager of the store, wrapping a failure in
    /// ``MigrationError/unreadableState(manager:store:reason:)`` for this manager.
    let readStoreStates: @Sendable () throws -> [String: ManagerState]
    let decideFirstLaunch: @Sendable () throws -> FirstLaunchDecision
    let apply: @Sendable (_ position: Int, MigrationContext) throws -> StoreApplyOutcome
    let updateState: @Sendable (_ update: (inout ManagerState) -> Void) throws -> Void
    let rebuild: @Sendable () throws -> Void

    init(
        name: String, storeID: ObjectIdentifier, storeDescription: String, isRebuildable: Bool, versions: [Version],
        dependencies: [[MigrationReference]], newerStorePolicy: NewerStorePolicy,
        hook: (@Sendable (Version?, Version) throws -> Void)?,
        readStoreStates: @escaping @Sendable () throws -> [String: ManagerState],
        decideFirstLaunch: @escaping @Sendable () throws -> FirstLaunchDecision,
        apply: @escaping @Sendable (_ position: Int, MigrationContext) throws -> StoreApplyOutcome,
        updateState: @escaping @Sendable (_ update: (inout ManagerState) -> Void) throws -> Void,
        rebuild: @escaping @Sendable () throws -> Void
    ) {
        self.name = name
        self.storeID = storeID
        self.storeDescription = storeDescription
        self.isRebuildable = isRebuildable
        self.versions = versions
        self.dependencies = dependencies
        self.newerStorePolicy = newerStorePolicy
        self.hook = hook
        self.readStoreStates = readStoreStates
        self.decideFirstLaunch = decideFirstLaunch
        self.apply = apply
        self.updateState = updateState
        self.rebuild = rebuild
    }
}

extension MigrationManager {
    /// Freezes the manager's registrations and policies for one plan or run.
    func definition() -> ManagerDefinition {
        let snapshot = snapshot()
        var versions = snapshot.registrations.versions
        var dependencies = snapshot.registrations.dependencies
        var bodies = snapshot.registrations.bodies
        // Apps usually register in version order; otherwise a sort that breaks ties by
        // registration order keeps duplicates in that order, so the graph reports them
        // deterministically.
        if versions.indices.dropFirst().contains(where: { versions[$0] < versions[$0 - 1] }) {
            let order = versions.indices.sorted { versions[$0] < versions[$1] || (versions[$0] == versions[$1] && $0 < $1) }
            versions = order.map { versions[$0] }
            dependencies = order.map { dependencies[$0] }
            bodies = order.map { bodies[$0] }
        }
        let store = self.store
        let name = self.name
        let firstLaunch = snapshot.firstLaunch
        return ManagerDefinition(
            name: name,
            storeID: ObjectIdentifier(store),
            storeDescription: store.description,
            isRebuildable: store.isRebuildable,
            versions: versions,
            dependencies: dependencies,
            newerStorePolicy: snapshot.newerStore,
            hook: snapshot.hook,
            readStoreStates: { [self] in try readStoreStates() },
            decideFirstLaunch: {
                switch firstLaunch {
                case .runAll: return .runAll
                case .baseline: return .baseline
                case .decide(let decide):
                    do {
                        return try decide(store)
                    } catch {
                        throw MigrationError.firstLaunchDecisionFailed(
                            manager: name, store: store.description, reason: "\(error)")
                    }
                }
            },
            apply: { [versions, bodies] position, context in
                let migration = StoreMigration<Store.Content>(
                    manager: name, version: versions[position], context: context,
                    body: bodies[position].run)
                return try store.apply(migration)
            },
            updateState: { update in try store.updateState(of: name, update) },
            rebuild: { try store.rebuild(resetting: name) }
        )
    }
}
