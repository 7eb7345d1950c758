/// Why a fleet could not start: nothing was migrated.
public enum FleetError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The tenant source could not be read (`message` is its error).
    case sourceUnreadable(source: String, message: String)
    /// ``FleetRunOptions/FailureBudget/share(_:)`` was given a share outside 0...1.
    case invalidFailureShare(Double)
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
        case .noClaims:
            return "The fleet has no claims shared by workers, so no status of who did what. "
                + "Make it with claims (MigrationFleet(appVersion:tenants:claims:template:)), or read its plan instead."
        }
    }
}
