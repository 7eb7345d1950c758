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
    /// Reads the store's records, with what a fleet's walk thread keeps for its next tenant when
    /// given (``WorkerResources``) and the store can use it.
    let readRecords: @Sendable (WorkerResources?) throws -> [String: MigrationRecord]
    /// Whether the store exists (``MigrationStore/exists``); asked only of stores without records.
    let storeExists: @Sendable () -> Bool
    /// The first-launch policy's decision; reads the store for ``FirstLaunchPolicy/decide(_:)``.
    let decideFirstLaunch: @Sendable () throws -> FirstLaunchDecision
    /// By position, whether the migration is resumable; empty when none is.
    let resumable: [Bool]
    /// The squashed migrations, sorted by the start of their range; usually none.
    let squashes: [SquashedMigration]
    let perform: @Sendable (Step, StepSource) throws -> Outcome

    init(
        name: String, storeDescription: String, identity: StoreIdentity, isRebuildable: Bool,
        versions: [Version], dependencies: [[MigrationReference]], deferred: [Bool], postDeploy: [Int], labels: MigrationLabels,
        newerStorePolicy: NewerStorePolicy, latePolicy: LateMigrationPolicy, fingerprintPolicy: FingerprintPolicy, hasHook: Bool,
        readRecords: @escaping @Sendable (WorkerResources?) throws -> [String: MigrationRecord],
        storeExists: @escaping @Sendable () -> Bool,
        decideFirstLaunch: @escaping @Sendable () throws -> FirstLaunchDecision,
        resumable: [Bool], squashes: [SquashedMigration] = [],
        perform: @escaping @Sendable (Step, StepSource) throws -> Outcome
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
        self.resumable = resumable
        self.squashes = squashes
        self.perform = perform
    }

    /// The manager as the graph sees it: a name, versions and edges.
    var graphManager: MigrationGraph.Manager {
        MigrationGraph.Manager(name: name, versions: versions, dependencies: dependencies)
    }
}
