import StoreMigrations

/// What a passing ``UpgradeTester/check(_:)`` did: the upgrade's own report, the stores it
/// compared, and how baselines account for migrations that did not run.
public struct UpgradeCheckReport: Sendable, CustomStringConvertible {
    /// The version the fixture was captured at.
    public let upgradedFrom: Version
    /// The app version of the coordinator under test.
    public let appVersion: Version
    /// The run that upgraded the restored fixture.
    public let upgrade: MigrationReport
    /// The stores compared, each as its managers' names.
    public let stores: [String]
    /// How many data invariants held.
    public let invariantsChecked: Int
    /// Migrations counted as applied through a baseline mark rather than run: `library: 1.1, 1.2
    /// by the baseline 1.2`.
    public let baselines: [String]

    public var description: String {
        var lines = ["upgrade from \(upgradedFrom) to \(appVersion) matches a fresh install: "
            + "\(stores.count) store\(stores.count == 1 ? "" : "s") (\(stores.joined(separator: "; "))), "
            + "\(invariantsChecked) invariant\(invariantsChecked == 1 ? "" : "s") held"]
        lines += baselines.map { "  \($0)" }
        return lines.joined(separator: "\n")
    }
}
