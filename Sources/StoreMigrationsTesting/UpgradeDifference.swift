import StoreMigrations

/// One way an upgraded store differs from a fresh install, or breaks an invariant of the app.
public struct UpgradeDifference: Sendable, Hashable, Codable, CustomStringConvertible {
    /// What differs.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// The schema: a table, column, index, foreign key, view or trigger.
        case schema
        /// A manager's applied migrations.
        case records
        /// A key a fresh install writes and the upgraded store lacks.
        case keys
        /// A row, a key's value or a file that one fresh install has and another has not, or
        /// has otherwise.
        case content
        /// One of the app's data invariants.
        case invariant
    }

    /// The managers of the store, comma-separated: `library`.
    public let store: String
    /// The version the fixture was captured at.
    public let upgradedFrom: Version
    /// What differs.
    public let kind: Kind
    /// Where: `table note, column body`, `key notes.sortOrder`, an invariant's name.
    public let location: String
    /// What a fresh install has; `nil` when it has nothing there. For an invariant, its name.
    public let fresh: String?
    /// What the upgraded store has; `nil` when it has nothing there. For an invariant, what
    /// broke it.
    public let upgraded: String?

    /// A difference in `store` at `location`.
    public init(
        store: String, upgradedFrom: Version, kind: Kind, location: String, fresh: String?, upgraded: String?
    ) {
        self.store = store
        self.upgradedFrom = upgradedFrom
        self.kind = kind
        self.location = location
        self.fresh = fresh
        self.upgraded = upgraded
    }

    /// Unified-diff lines: `-` what a fresh install has, `+` what the upgraded store has.
    public var description: String {
        var lines = ["@@ \(store), upgraded from \(upgradedFrom): \(location) @@"]
        if kind == .invariant {
            lines.append("! invariant broken: \(upgraded ?? "")")
            return lines.joined(separator: "\n")
        }
        lines.append("- " + (fresh ?? "(absent in a fresh install)"))
        lines.append("+ " + (upgraded ?? "(absent after the upgrade)"))
        return lines.joined(separator: "\n")
    }
}
