/// A manager as the graph, the planner and the scheduler see it: its migrations sorted by
/// version, its policies, and closures that reach its store without knowing the store's type.
struct ManagerDefinition: Sendable {
    let name: String
    let storeID: ObjectIdentifier
    let storeDescription: String
    let isRebuildable: Bool
    /// Ascending; the position of a version is its index in ``dependencies`` and ``apply``.
    let versions: [Version]
    let dependencies: [[MigrationReference]]
    let newerStorePolicy: NewerStorePolicy
    let hook: (@Sendable (Version?, Version) throws -> Void)?

    let readState: @Sendable () throws -> ManagerState
    let decideFirstLaunch: @Sendable () throws -> FirstLaunchDecision
    let apply: @Sendable (_ position: Int, MigrationContext) throws -> StoreApplyOutcome
    let updateState: @Sendable (_ update: (inout ManagerState) -> Void) throws -> Void
    let rebuild: @Sendable () throws -> Void
}

extension MigrationManager {
    /// Freezes the manager's registrations and policies for one plan or run.
    func definition() -> ManagerDefinition {
        let snapshot = snapshot()
        // A stable sort keeps duplicates in registration order, so the graph reports them
        // deterministically.
        let registrations = snapshot.registrations.sorted { $0.version < $1.version }
        let store = self.store
        let name = self.name
        let bodies = registrations.map(\.body)
        let firstLaunch = snapshot.firstLaunch
        return ManagerDefinition(
            name: name,
            storeID: ObjectIdentifier(store),
            storeDescription: store.description,
            isRebuildable: store.isRebuildable,
            versions: registrations.map(\.version),
            dependencies: registrations.map(\.dependencies),
            newerStorePolicy: snapshot.newerStore,
            hook: snapshot.hook,
            readState: { [self] in try readState() },
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
            apply: { position, context in
                let migration = StoreMigration<Store.Content>(
                    manager: name, version: registrations[position].version, context: context,
                    body: bodies[position])
                return try store.apply(migration)
            },
            updateState: { update in try store.updateState(of: name, update) },
            rebuild: { try store.rebuild(resetting: name) }
        )
    }
}
