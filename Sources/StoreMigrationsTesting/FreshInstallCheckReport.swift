import StoreMigrations

/// What a passing ``UpgradeTester/checkFreshInstall(_:referencePath:matches:)`` did: the two runs
/// that made the fresh installs, the stores compared, and the invariants that held on both.
public struct FreshInstallCheckReport: Sendable, CustomStringConvertible {
    /// The app version both installs were made by.
    public let appVersion: Version
    /// The name of the install under test's path: `as shipped`.
    public let path: String
    /// The name of the reference install's path: `replayed`.
    public let referencePath: String
    /// The run that made the install under test (its squash steps are `library:squash@1.2`).
    public let install: MigrationReport
    /// The run that made the reference install.
    public let reference: MigrationReport
    /// The stores compared, each as its managers' names.
    public let stores: [String]
    /// How many data invariants held, on each install.
    public let invariantsChecked: Int

    public var description: String {
        "a fresh install of \(appVersion) \(path) (\(install.steps.count) step\(install.steps.count == 1 ? "" : "s")) "
            + "ends where one \(referencePath) does (\(reference.steps.count) step\(reference.steps.count == 1 ? "" : "s")): "
            + "\(stores.count) store\(stores.count == 1 ? "" : "s") (\(stores.joined(separator: "; "))), "
            + "\(invariantsChecked) invariant\(invariantsChecked == 1 ? "" : "s") held"
    }
}
