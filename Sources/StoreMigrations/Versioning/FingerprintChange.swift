/// An applied migration whose registration no longer gives the fingerprint recorded when it ran,
/// or a resumable migration whose committed batches ran another fingerprint than the one
/// registered now: its SQL, file or declared fingerprint was edited afterwards.
public struct FingerprintChange: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The migration.
    public let migration: MigrationReference
    /// Its name, if it has one.
    public let name: String?
    /// The fingerprint recorded when it was applied, or with its committed batches.
    public let recorded: MigrationFingerprint
    /// The fingerprint its registration gives now.
    public let current: MigrationFingerprint
    /// Whether the migration is a resumable one part-way, not applied: the next batch would run
    /// the edited body from a cursor the earlier body left.
    public let isInProgress: Bool

    /// Creates a change.
    init(
        migration: MigrationReference, name: String?, recorded: MigrationFingerprint, current: MigrationFingerprint,
        isInProgress: Bool = false
    ) {
        self.migration = migration
        self.name = name
        self.recorded = recorded
        self.current = current
        self.isInProgress = isInProgress
    }

    /// `library@1.1 (add guids): applied as v1:3f0c…, now v1:9a21…`, or `… in progress as …`.
    public var description: String {
        // The reference alone, so that one carrying the name too does not show it twice.
        "\(migration.manager)@\(migration.version)".titled(name ?? migration.name)
            + ": \(isInProgress ? "in progress" : "applied") as \(recorded), now \(current)"
    }

    private enum CodingKeys: String, CodingKey { case migration, name, recorded, current, isInProgress }

    // Written by a release before resumable migrations were compared, a change has no
    // `isInProgress`: it was an applied one.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            migration: try container.decode(MigrationReference.self, forKey: .migration),
            name: try container.decodeIfPresent(String.self, forKey: .name),
            recorded: try container.decode(MigrationFingerprint.self, forKey: .recorded),
            current: try container.decode(MigrationFingerprint.self, forKey: .current),
            isInProgress: try container.decodeIfPresent(Bool.self, forKey: .isInProgress) ?? false)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(migration, forKey: .migration)
        try container.encodeIfPresent(name, forKey: .name)
        try container.encode(recorded, forKey: .recorded)
        try container.encode(current, forKey: .current)
        if isInProgress { try container.encode(true, forKey: .isInProgress) }
    }
}
