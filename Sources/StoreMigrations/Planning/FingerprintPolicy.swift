/// What a manager does with an applied migration whose fingerprint changed since it ran: its SQL,
/// its file or the fingerprint given for its body was edited afterwards, so the store says
/// applied while the code says something else (see ``MigrationFingerprint``).
///
/// ```swift
/// library.fingerprintPolicy = .fail   // as Flyway: refuse to start until someone decides
/// ```
///
/// Records written before fingerprints existed are never a change. ``MigrationManager/repairFingerprints()``
/// accepts the migrations as they are now.
public enum FingerprintPolicy: String, Sendable, Hashable, Codable {
    /// `run()` throws ``MigrationError/fingerprintsChanged(manager:store:changes:)`` before
    /// anything runs; the plan lists the changes.
    case fail
    /// The plan lists the changes (``MigrationPlan/Manager/changedFingerprints``) and its text
    /// warns; the run goes on (the default: an app at launch had better keep working).
    case warn
    /// Fingerprints are neither compared nor reported.
    case ignore
}
