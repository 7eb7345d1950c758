import Foundation

/// One applied migration of a ``MigrationRecord``, with when and how long it ran where the store
/// keeps a history (a SQLite store does; preferences and cache files keep versions only), and the
/// name and fingerprint it was registered with when it ran (`nil` in records written before
/// releases kept them).
public struct AppliedMigration: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The migration's version.
    public let version: Version
    /// When the step that applied it began, if the store keeps it.
    public let appliedAt: Date?
    /// How long the step took, in seconds, if the store keeps it.
    public let duration: TimeInterval?
    /// The name and fingerprint, when either was recorded: one reference rather than two fields,
    /// since a launch reads, copies and frees every applied migration of every store, most of
    /// them without either.
    private let labels: Labels?

    private final class Labels: Sendable {
        let name: String?
        let fingerprint: MigrationFingerprint?

        init(name: String?, fingerprint: MigrationFingerprint?) {
            self.name = name
            self.fingerprint = fingerprint
        }
    }

    /// The migration's name when it ran, if it had one.
    public var name: String? { labels?.name }
    /// The migration's fingerprint when it ran, if it had one (see ``MigrationFingerprint``).
    public var fingerprint: MigrationFingerprint? { labels?.fingerprint }

    /// Creates an entry.
    public init(
        version: Version, appliedAt: Date? = nil, duration: TimeInterval? = nil, name: String? = nil,
        fingerprint: MigrationFingerprint? = nil
    ) {
        self.version = version
        self.appliedAt = appliedAt
        self.duration = duration
        labels = name == nil && fingerprint == nil ? nil : Labels(name: name, fingerprint: fingerprint)
    }

    public static func == (lhs: AppliedMigration, rhs: AppliedMigration) -> Bool {
        lhs.version == rhs.version && lhs.appliedAt == rhs.appliedAt && lhs.duration == rhs.duration
            && lhs.name == rhs.name && lhs.fingerprint == rhs.fingerprint
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(version)
        hasher.combine(appliedAt)
        hasher.combine(duration)
        hasher.combine(name)
        hasher.combine(fingerprint)
    }

    private enum CodingKeys: String, CodingKey { case version, appliedAt, duration, name, fingerprint }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            version: try container.decode(Version.self, forKey: .version),
            appliedAt: try container.decodeIfPresent(Date.self, forKey: .appliedAt),
            duration: try container.decodeIfPresent(TimeInterval.self, forKey: .duration),
            name: try container.decodeIfPresent(String.self, forKey: .name),
            fingerprint: try container.decodeIfPresent(MigrationFingerprint.self, forKey: .fingerprint))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(version, forKey: .version)
        try container.encodeIfPresent(appliedAt, forKey: .appliedAt)
        try container.encodeIfPresent(duration, forKey: .duration)
        try container.encodeIfPresent(name, forKey: .name)
        try container.encodeIfPresent(fingerprint, forKey: .fingerprint)
    }

    public var description: String {
        var text = version.description.titled(name)
        if let appliedAt { text += " at \(appliedAt.formatted(.iso8601))" }
        if let duration { text += String(format: " in %.3f s", duration) }
        if let fingerprint { text += " (\(fingerprint))" }
        return text
    }
}
