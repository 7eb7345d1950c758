/// One fact about a store that an upgrade check compares: a column's definition, an index, a
/// preference key, a manager's applied migrations, a row.
///
/// ```swift
/// SnapshotEntry(.schema, "table note, column body", "\"body\" TEXT DEFAULT ''")
/// SnapshotEntry(.keys, "key notes.sortOrder", "a string")
/// SnapshotEntry(.content, "table category, row id 1", "[id: 1, name: 'Inbox']")
/// ```
public struct SnapshotEntry: Sendable, Hashable, Codable, CustomStringConvertible {
    /// How an entry is compared.
    public enum Aspect: String, Sendable, Hashable, Codable, CaseIterable {
        /// The same on both sides, present or absent: a table, a column, an index.
        case schema
        /// Every manager's applied migrations, baselines counted in.
        case records
        /// Present in an upgraded store whenever a fresh install has it (a default it writes);
        /// an upgraded store may have more (the user's own settings).
        case keys
        /// The same on both sides, present or absent: a row, a key's value, a file. Compared
        /// only between two fresh installs (``UpgradeTester/checkFreshInstall(_:referencePath:matches:)``),
        /// which hold no user's data.
        case content
    }

    /// How the entry is compared.
    public let aspect: Aspect
    /// What it is about, for the diff: `table note, column body`, `key notes.sortOrder`.
    public let location: String
    /// Its normalized value.
    public let value: String

    /// An entry about `location`, whose normalized value is `value`.
    public init(_ aspect: Aspect, _ location: String, _ value: String) {
        self.aspect = aspect
        self.location = location
        self.value = value
    }

    public var description: String { "\(aspect.rawValue) \(location): \(value)" }
}
