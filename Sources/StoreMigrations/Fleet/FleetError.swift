/// Why a fleet could not start: nothing was migrated.
public enum FleetError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The tenant source could not be read (`message` is its error).
    case sourceUnreadable(source: String, message: String)
    /// ``FleetRunOptions/FailureBudget/share(_:)`` was given a share outside 0...1.
    case invalidFailureShare(Double)
    /// ``FleetRunOptions/maxConnections`` was given a cap below 1.
    case invalidConnectionCap(Int)
    /// ``FleetRunOptions/maxConnections`` was given for a source whose tenants' stores share no
    /// connections, so that no cap can be kept (a ``TenantList``, or a source of your own).
    case connectionCapNotKept(source: String)
    /// ``MigrationFleet/status()`` was asked of a fleet made without ``FleetClaims``.
    case noClaims

    public var description: String {
        switch self {
        case let .sourceUnreadable(source, message):
            return "The tenants of \(source) could not be read: \(message). No tenant was migrated; "
                + "check that the source is there and readable, then run again."
        case .invalidFailureShare(let share):
            return "The fleet's failure budget is a share of \(share), which is not between 0 and 1. No tenant was migrated; "
                + "give a share such as 0.05 for 5% of the fleet."
        case .invalidConnectionCap(let cap):
            return "The fleet's cap on connections is \(cap), below 1. No tenant was migrated; "
                + "give a cap of at least 1 connection per database, or none to keep the tenant source's own."
        case .connectionCapNotKept(let source):
            return "The tenants of \(source) share no connections, so the run's cap on connections cannot be kept. "
                + "No tenant was migrated; leave the cap out and bound the connections with the cap on tenants in flight, "
                + "or list the tenants with a source that pools them (PostgreSQLTenantSchemas, PostgreSQLTenantDatabases)."
        case .noClaims:
            return "The fleet has no claims shared by workers, so no status of who did what. "
                + "Make it with claims (MigrationFleet(appVersion:tenants:claims:template:)), or read its plan instead."
        }
    }
}
