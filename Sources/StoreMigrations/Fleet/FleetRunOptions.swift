import Foundation

/// How ``MigrationFleet/migrate(_:observer:)-95oxv`` runs a fleet: how many tenants at once, how many
/// failures it accepts, and which tenants go first.
///
/// ```swift
/// var options = FleetRunOptions(maxTenantsInFlight: 8)
/// options.failureBudget = .failures(3)   // a fourth failure stops starting tenants
/// options.canary = .first(20)            // the rest only if these 20 succeed
/// let report = try fleet.migrate(options)
/// ```
public struct FleetRunOptions: Sendable, Hashable {
    /// When a run stops starting tenants because too many failed. Tenants already running
    /// finish; the others are reported as not started, and a later run takes them.
    public enum FailureBudget: Sendable, Hashable {
        /// Accepts this many failed tenants: one more stops the run from starting tenants.
        case failures(Int)
        /// Accepts failed tenants up to this share of the fleet (from 0 to 1): one more stops
        /// the run from starting tenants. The fleet is counted before the run starts.
        case share(Double)
    }

    /// The tenants that run first, alone: the rest of the fleet runs only if every one of them
    /// succeeded (or had nothing to do).
    public enum Canary: Sendable, Hashable {
        /// The first tenants the source lists, this many.
        case first(Int)
        /// The tenants of this group (``Tenant/group``), wherever the source lists them.
        case group(String)
    }

    /// At most how many tenants migrate at once. Defaults to the number of active processors;
    /// raise it for tenants whose work waits on a server rather than on this machine's cores.
    public var maxTenantsInFlight: Int
    /// When the run stops starting tenants; `nil` (the default) runs every tenant whatever
    /// fails.
    public var failureBudget: FailureBudget?
    /// The tenants that run first; `nil` (the default) runs the fleet in one wave.
    public var canary: Canary?
    /// Whether each tenant runs its post-deploy migrations too (``PostDeployMigration``).
    public var postDeploy: Bool
    /// How long a worker waits before it tries again the tenants another live worker held
    /// when their turn came (a fleet with ``FleetClaims``): the run ends when each of them
    /// has ended, by that worker or, when it dies, by this one.
    public var claimRetryInterval: Duration = .milliseconds(200)

    /// Options for a run; every argument left out is the default described with its property.
    public init(
        maxTenantsInFlight: Int = ProcessInfo.processInfo.activeProcessorCount, failureBudget: FailureBudget? = nil,
        canary: Canary? = nil, postDeploy: Bool = false
    ) {
        self.maxTenantsInFlight = maxTenantsInFlight
        self.failureBudget = failureBudget
        self.canary = canary
        self.postDeploy = postDeploy
    }
}
