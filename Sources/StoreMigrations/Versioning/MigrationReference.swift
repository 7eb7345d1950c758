/// Names one migration of one manager, for dependencies and messages: `library@2.0`.
///
/// ```swift
/// library.register("2.0", dependsOn: [prefs.migration("1.1")]) { db in … }
/// library.register("2.1", dependsOn: [.migration(manager: "preferences", version: "1.2")]) { db in … }
/// ```
public struct MigrationReference: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The manager's name.
    public let manager: String
    /// The migration's version.
    public let version: Version

    /// Names migration `version` of the manager called `manager`.
    public static func migration(manager: String, version: Version) -> MigrationReference {
        MigrationReference(manager: manager, version: version)
    }

    /// Names migration `version` of the manager called `manager`.
    public init(manager: String, version: Version) {
        self.manager = manager
        self.version = version
    }

    public var description: String { "\(manager)@\(version)" }
}
