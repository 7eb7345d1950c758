/// Names one migration of one manager, for dependencies and messages: `library@2.0`.
///
/// ```swift
/// library.register("2.0", dependsOn: [prefs.migration("1.1")]) { db in … }
/// library.register("2.1", dependsOn: [.migration(manager: "preferences", version: "1.2")]) { db in … }
/// ```
///
/// A reference the coordinator gives, in a store's error for instance, also carries the
/// migration's name when it was registered with one: `library@1.1 (add guids to events)`. The
/// name is shown, never compared: two references to the same migration are equal whatever
/// names they carry.
public struct MigrationReference: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The manager's name.
    public let manager: String
    /// The migration's version.
    public let version: Version
    /// The migration's name (``MigrationOptions/named(_:fingerprint:)-type.method``), when the coordinator
    /// made this reference and the migration has one; `nil` otherwise.
    public let name: String?

    /// Names migration `version` of the manager called `manager`.
    public static func migration(manager: String, version: Version) -> MigrationReference {
        MigrationReference(manager: manager, version: version)
    }

    /// Names migration `version` of the manager called `manager`.
    public init(manager: String, version: Version) {
        self.init(manager: manager, version: version, name: nil)
    }

    package init(manager: String, version: Version, name: String?) {
        self.manager = manager
        self.version = version
        self.name = name
    }

    /// `library@1.1`, followed by the name when there is one: `library@1.1 (add guids to events)`.
    public var description: String { "\(manager)@\(version)".titled(name) }

    public static func == (lhs: MigrationReference, rhs: MigrationReference) -> Bool {
        lhs.manager == rhs.manager && lhs.version == rhs.version
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(manager)
        hasher.combine(version)
    }
}
