/// What the planner knows of one manager besides its place in the graph: its record and
/// policies, already read and decided. The planner does no I/O.
struct PlanningInput: Sendable {
    /// How reports name the manager's store.
    let store: String
    /// The index of the manager's store among the distinct stores (by identity).
    let storeIndex: Int
    /// Whether the store does not exist yet (see ``MigrationPlan/Manager/createsStore``).
    let storeIsMissing: Bool
    let isRebuildable: Bool
    let record: MigrationRecord
    let newerStorePolicy: NewerStorePolicy
    let latePolicy: LateMigrationPolicy
    /// By position, each migration's name; empty when none has one.
    let names: [String?]
    /// By position, each migration's fingerprint; empty when none has one. Read only for the
    /// migrations the record holds, so that a new store's plan computes none.
    let fingerprints: FingerprintTable
    let fingerprintPolicy: FingerprintPolicy
    /// The first-launch policy's decision, when the record has no level.
    let firstLaunch: FirstLaunchDecision?
    let hasHook: Bool
    /// The positions of the migrations registered post-deploy, ascending; usually none.
    var postDeploy: [Int] = []
    /// By position, whether the migration is resumable (runs in batches); empty when none is.
    var resumable: [Bool] = []
    /// The manager's squashed migrations, sorted by the start of their range; usually none.
    var squashes: [SquashedMigration] = []
}
