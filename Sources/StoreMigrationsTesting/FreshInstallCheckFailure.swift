import Foundation
import StoreMigrations

/// Two fresh installs of one release that do not end alike: thrown by
/// ``UpgradeTester/checkFreshInstall(_:referencePath:matches:)`` when a fresh install through a
/// shortcut (a squashed migration, a store created from its declared schema) differs from the
/// same history replayed migration by migration. It prints as a diff naming the store, the table
/// or key, and each install's path:
///
/// ```text
/// a fresh install of 2.0 as shipped does not end where one replayed does in library (1 difference);
/// fix library's squashed migration (or declared schema) to end where the migrations it replaces do
/// library as shipped: library:squash@1.1, library@2.0; replayed: library@1.0, library@1.1, …
/// --- fresh install of 2.0, replayed
/// +++ fresh install of 2.0, as shipped
/// @@ library, as shipped: index note_title @@
/// - on note: index note_title (title)
/// + (absent as shipped)
/// ```
public struct FreshInstallCheckFailure: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// One way the two installs differ.
    public struct Difference: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The managers of the store, comma-separated: `library`.
        public let store: String
        /// What differs; ``UpgradeDifference/Kind/invariant`` for a data invariant the install
        /// under test breaks.
        public let kind: UpgradeDifference.Kind
        /// Where: `table note, column body`, `key notes.sortOrder`, `records of library,
        /// migration 1.1`, an invariant's name.
        public let location: String
        /// What the reference install has; `nil` when it has nothing there. For an invariant,
        /// its name.
        public let reference: String?
        /// What the install under test has; `nil` when it has nothing there. For an invariant,
        /// what broke it.
        public let installed: String?
        /// The path of the side that differs, as the failure names it: `as shipped`.
        public let path: String

        /// A difference in `store` at `location`.
        public init(store: String, kind: UpgradeDifference.Kind, location: String, reference: String?, installed: String?, path: String) {
            self.store = store
            self.kind = kind
            self.location = location
            self.reference = reference
            self.installed = installed
            self.path = path
        }

        /// Unified-diff lines: `-` what the reference install has, `+` what the install under test has.
        public var description: String {
            var lines = ["@@ \(store), \(path): \(location) @@"]
            if kind == .invariant {
                lines.append("! invariant broken: \(installed ?? "")")
                return lines.joined(separator: "\n")
            }
            lines.append("- " + (reference ?? "(absent in the reference install)"))
            lines.append("+ " + (installed ?? "(absent \(path))"))
            return lines.joined(separator: "\n")
        }
    }

    /// The app version both installs were made by.
    public let appVersion: Version
    /// The name of the install under test's path (the tester's coordinator): `as shipped`.
    public let path: String
    /// The name of the reference install's path: `replayed`.
    public let referencePath: String
    /// For each store that differs, the steps each install ran on it: `library as shipped:
    /// library:squash@1.2, library@2.0; replayed: library@1.0, …`.
    public let steps: [String]
    /// Every difference, store by store in registration order.
    public let differences: [Difference]

    init(appVersion: Version, path: String, referencePath: String, steps: [String], differences: [Difference]) {
        self.appVersion = appVersion
        self.path = path
        self.referencePath = referencePath
        self.steps = steps
        self.differences = differences
    }

    /// The stores that differ, in order, each once.
    public var stores: [String] { DiffSummary.once(differences.map(\.store)) }

    public var description: String {
        let names = stores.joined(separator: ", ")
        let count = DiffSummary.count(differences.count)
        let summary = "a fresh install of \(appVersion) \(path) does not end where one \(referencePath) does in \(names) (\(count)); "
            + "fix \(names)'s squashed migration (or declared schema) to end where the migrations it replaces do"
        return ([summary] + steps + ["--- fresh install of \(appVersion), \(referencePath)", "+++ fresh install of \(appVersion), \(path)"]
            + differences.map(\.description)).joined(separator: "\n")
    }

    public var errorDescription: String? { description }
}
