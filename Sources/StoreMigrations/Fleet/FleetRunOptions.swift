import Foundation

/// How ``MigrationFleet/migrate(_:observer:)-95oxv`` runs a fleet: how many tenants at once, how many
/// connections they share, how many failures it accepts, and which tenants go first.
///
/// ```swift
/// var options = FleetRunOptions(maxTenantsInFlight: 8, maxConnections: 2)
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
    /// At most how many connections the tenants in flight hold open to each database at once,
    /// apart from ``maxTenantsInFlight``; `nil` (the default) keeps the tenant source's own cap.
    ///
    /// For the schemas of one PostgreSQL database (`PostgreSQLTenantSchemas`) the cap is the
    /// size of the pool every tenant's stores share: a tenant in flight waits for a pooled
    /// connection while all are in use. For a database per tenant (`PostgreSQLTenantDatabases`)
    /// each database has a pool of its own of this size. Each file of a folder of SQLite files
    /// (`SQLiteTenantFolder`) is a database of its own, which its store reaches through one
    /// connection: any cap is kept, and the files open at once are bounded by
    /// ``maxTenantsInFlight`` (one per SQLite store of each tenant in flight). Outside the cap:
    /// the session that lists the tenants, a fleet's claims' session (``FleetClaims``), and the
    /// session a PostgreSQL step opens to watch its table-lock waits when it runs past half its
    /// lock timeout.
    ///
    /// A run given a cap on a source that cannot keep one (a ``TenantList``, or a source of your
    /// own) throws ``FleetError/connectionCapNotKept(source:)`` before any tenant starts; a cap
    /// below 1 throws ``FleetError/invalidConnectionCap(_:)``.
    public var maxConnections: Int?
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
        maxTenantsInFlight: Int = ProcessInfo.processInfo.activeProcessorCount, maxConnections: Int? = nil,
        failureBudget: FailureBudget? = nil, canary: Canary? = nil, postDeploy: Bool = false
    ) {
        self.maxTenantsInFlight = maxTenantsInFlight
        self.maxConnections = maxConnections
        self.failureBudget = failureBudget
        self.canary = canary
        self.postDeploy = postDeploy
    }
}
