import Foundation
import StoreMigrations

/// An upgrade that does not end where a fresh install does, or breaks an invariant of the app:
/// thrown by ``UpgradeTester/check(_:)``, and printed as a diff by XCTest and Swift Testing alike.
///
/// ```text
/// upgrading library from 1.0 to 2.0 does not end where a fresh install of 2.0 does (1 difference);
/// fix the migrations of library after 1.0 so that an upgraded store matches a fresh install
/// --- fresh install of 2.0
/// +++ upgraded from 1.0
/// @@ library, upgraded from 1.0: table note, column body @@
/// - "body" TEXT DEFAULT ''
/// + "body" TEXT
/// ```
public struct UpgradeCheckFailure: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// The version the fixture was captured at.
    public let upgradedFrom: Version
    /// The app version of the coordinator under test.
    public let appVersion: Version
    /// Every difference, store by store in registration order.
    public let differences: [UpgradeDifference]

    /// A failure made of `differences`.
    init(upgradedFrom: Version, appVersion: Version, differences: [UpgradeDifference]) {
        self.upgradedFrom = upgradedFrom
        self.appVersion = appVersion
        self.differences = differences
    }

    /// The stores that differ, in order, each once.
    public var stores: [String] { DiffSummary.once(differences.map(\.store)) }

    public var description: String {
        let names = stores.joined(separator: ", ")
        let count = DiffSummary.count(differences.count)
        let onlyInvariants = differences.allSatisfy { $0.kind == .invariant }
        let summary = onlyInvariants
            ? "upgrading \(names) from \(upgradedFrom) to \(appVersion) breaks the app's data invariants (\(count));"
                + " fix the migrations of \(names) after \(upgradedFrom) so that the upgraded data keeps them"
            : "upgrading \(names) from \(upgradedFrom) to \(appVersion) does not end where a fresh install of \(appVersion) does"
                + " (\(count)); fix the migrations of \(names) after \(upgradedFrom) so that an upgraded store matches a fresh install"
        return ([summary, "--- fresh install of \(appVersion)", "+++ upgraded from \(upgradedFrom)"]
            + differences.map(\.description)).joined(separator: "\n")
    }

    public var errorDescription: String? { description }
}
