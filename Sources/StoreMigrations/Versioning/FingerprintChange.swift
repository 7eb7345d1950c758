/// An applied migration whose registration no longer gives the fingerprint recorded when it ran:
/// its SQL, file or declared fingerprint was edited afterwards.
public struct FingerprintChange: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The migration.
    public let migration: MigrationReference
    /// Its name, if it has one.
    public let name: String?
    /// The fingerprint recorded when it was applied.
    public let recorded: MigrationFingerprint
    /// The fingerprint its registration gives now.
    public let current: MigrationFingerprint

    /// Creates a change.
    init(migration: MigrationReference, name: String?, recorded: MigrationFingerprint, current: MigrationFingerprint) {
        self.migration = migration
        self.name = name
        self.recorded = recorded
        self.current = current
    }

    /// `library@1.1 (add guids): applied as v1:3f0c…, now v1:9a21…`.
    public var description: String {
        // The reference alone, so that one carrying the name too does not show it twice.
        "\(migration.manager)@\(migration.version)".titled(name ?? migration.name) + ": applied as \(recorded), now \(current)"
    }
}
