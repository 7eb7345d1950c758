/// A manager frozen for one plan or run, as the coordinator sees it whatever its store's type:
/// its migrations sorted by version, its policies, and one closure that carries out a step on
/// its store through the ``StepExecutor``. A class, so that running a step copies nothing.
final class ManagerDefinition: Sendable {
    let name: String
    let storeDescription: String
    let identity: StoreIdentity
    let isRebuildable: Bool
    /// Ascending; the position of a version is its index in ``dependencies``.
    let versions: [Version]
    let dependencies: [[MigrationReference]]
    /// By position: whether the migration was registered deferred; empty when none was.
    let deferred: [Bool]
    /// The positions of the migrations registered post-deploy, ascending.
    let postDeploy: [Int]
    /// By position, each migration's name and fingerprint; empty when no migration has either.
    let labels: MigrationLabels
    let newerStorePolicy: NewerStorePolicy
    let latePolicy: LateMigrationPolicy
    let fingerprintPolicy: FingerprintPolicy
    let hasHook: Bool
    let readRecords: @Sendable () throws -> [String: MigrationRecord]
    /// Whether the store exists (``MigrationStore/exists``); asked only of stores without records.
    let storeExists: @Sendable () -> Bool
    /// The first-launch policy's decision; reads the store for ``FirstLaunchPolicy/decide(_:)``.
    let decideFirstLaunch: @Sendable () throws -> FirstLaunchDecision
    let perform: @Sendable (StepWork, StepSource) throws -> StepOutcome

    init(
        name: String, storeDescription: String, identity: StoreIdentity, isRebuildable: Bool,
        versions: [Version], dependencies: [[MigrationReference]], deferred: [Bool], postDeploy: [Int], labels: MigrationLabels,
        newerStorePolicy: NewerStorePolicy, latePolicy: LateMigrationPolicy, fingerprintPolicy: FingerprintPolicy, hasHook: Bool,
        readRecords: @escaping @Sendable () throws -> [String: MigrationRecord],
        storeExists: @escaping @Sendable () -> Bool,
        decideFirstLaunch: @escaping @Sendable () throws -> FirstLaunchDecision,
        perform: @escaping @Sendable (StepWork, StepSource) throws -> StepOutcome
    ) {
        self.name = name
        self.storeDescription = storeDescription
        self.identity = identity
        self.isRebuildable = isRebuildable
        self.versions = versions
        self.dependencies = dependencies
        self.deferred = deferred
        self.postDeploy = postDeploy
        self.labels = labels
        self.newerStorePolicy = newerStorePolicy
        self.latePolicy = latePolicy
        self.fingerprintPolicy = fingerprintPolicy
        self.hasHook = hasHook
        self.readRecords = readRecords
        self.storeExists = storeExists
        self.decideFirstLaunch = decideFirstLaunch
        self.perform = perform
    }

    /// The manager as the graph sees it: a name, versions and edges.
    var graphManager: MigrationGraph.Manager {
        MigrationGraph.Manager(name: name, versions: versions, dependencies: dependencies)
    }
}

extension MigrationManager {
    /// Freezes the manager's registrations and policies for one plan or run.
    func definition() -> ManagerDefinition {
        let snapshot = snapshot()
        var versions = snapshot.registrations.versions
        var dependencies = snapshot.registrations.dependencies
        var bodies = snapshot.registrations.bodies
        var transactions = snapshot.registrations.transactions
        var options = snapshot.registrations.options
        // Apps usually register in version order; otherwise a sort that breaks ties by
        // registration order keeps duplicates in that order, so the graph reports them
        // deterministically.
        if versions.indices.dropFirst().contains(where: { versions[$0] < versions[$0 - 1] }) {
            let order = versions.indices.sorted { versions[$0] < versions[$1] || (versions[$0] == versions[$1] && $0 < $1) }
            versions = order.map { versions[$0] }
            dependencies = order.map { dependencies[$0] }
            bodies = order.map { bodies[$0] }
            transactions = order.map { transactions[$0] }
            options = order.map { options[$0] }
        }
        let store = self.store
        let name = self.name
        let firstLaunch = snapshot.firstLaunch
        let hooks = snapshot.hooks
        // Decided once per manager rather than by a dynamic cast of the content at every step.
        let carriesContext = Store.Content.self is any MigrationContextCarrier.Type
        let labels = MigrationLabels(options)
        return ManagerDefinition(
            name: name, storeDescription: store.description, identity: store.identity,
            isRebuildable: store.isRebuildable, versions: versions, dependencies: dependencies,
            deferred: snapshot.registrations.hasDeferred ? bodies.map(\.isDeferred) : [],
            postDeploy: options.indices.filter { options[$0].isPostDeploy }, labels: labels,
            newerStorePolicy: snapshot.newerStore, latePolicy: snapshot.late, fingerprintPolicy: snapshot.fingerprint,
            hasHook: !hooks.isEmpty,
            readRecords: { [self] in try readStoreRecords() },
            storeExists: { store.exists },
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
            perform: { [bodies, transactions, options, labels, newerStore = snapshot.newerStore] work, source in
                // Read again under the lock, a record past the app's version stops the step unless
                // the policy ignores newer stores.
                let newerThan = newerStore == .ignore ? nil : source.run.appVersion
                switch work {
                case let .migrate(position, version):
                    switch bodies[position] {
                    case .plain(let body):
                        return try StepExecutor.migrate(
                            version, of: name, in: store, source: source, carriesContext: carriesContext,
                            transaction: transactions[position], options: options[position], label: labels[position],
                            refusingNewerThan: newerThan
                        ) { content, _ in try body(&content) }
                    case .withContext(let body):
                        return try StepExecutor.migrate(
                            version, of: name, in: store, source: source, carriesContext: carriesContext,
                            transaction: transactions[position], options: options[position], label: labels[position],
                            refusingNewerThan: newerThan
                        ) { content, context in try body(&content, context()) }
                    case let .batched(batch, size, _):
                        return try StepExecutor.migrateInBatches(
                            version, of: name, in: store, source: source, carriesContext: carriesContext,
                            size: size, options: options[position], label: labels[position], refusingNewerThan: newerThan, batch)
                    }
                case let .baseline(version):
                    return try StepExecutor.baseline(version, of: name, in: store, source: source)
                case let .reset(appVersion):
                    return try StepExecutor.reset(name, in: store, newerThan: appVersion, source: source)
                case let .appVersionChange(current):
                    return try StepExecutor.appVersionChange(
                        to: current, of: name, in: store, source: source, refusingNewerThan: newerThan
                    ) { previous, current in
                        for hook in hooks { try hook(previous, current) }
                    }
                }
            }
        )
    }
}
