import Foundation

/// One manager's record as a store keeps it, before it means anything: the fields every store
/// kind writes (a levels row and its history rows, or an entry of a records file).
///
/// What these fields mean is decided once, by ``MigrationRecord/init(decoding:)``: every store
/// reads its own format into this value and leaves the meaning to it.
package struct StoredRecord: Sendable, Hashable {
    /// The highest version applied, which every release writes and older ones read alone.
    package var level: Version?
    /// The baseline mark, where the store keeps one.
    package var baseline: Version?
    /// The app version the app-version-change hook last ran for.
    package var appVersion: Version?
    /// The migrations applied, in the order they were recorded; empty for a store written before
    /// records held sets.
    package var applied: [AppliedMigration]
    /// The resumable migrations' progress.
    package var inProgress: [StepProgress]

    package init(
        level: Version? = nil, baseline: Version? = nil, appVersion: Version? = nil, applied: [AppliedMigration] = [],
        inProgress: [StepProgress] = []
    ) {
        self.level = level
        self.baseline = baseline
        self.appVersion = appVersion
        self.applied = applied
        self.inProgress = inProgress
    }
}

extension MigrationRecord {
    /// What a stored record means, for every store and every release that wrote it.
    ///
    /// - A store written before records held sets keeps only a level: everything at or below it
    ///   was applied, so it becomes the baseline mark.
    /// - A level above what the applied set and the baseline give (an older release, which
    ///   writes only the level, migrated the store after a newer one) raises the baseline to it.
    /// - Of two entries for one version, the first recorded is kept.
    /// - An applied migration without a name or fingerprint (recorded before releases kept them,
    ///   or by one that does not) has none: a plan never takes it for an edited migration.
    /// - The progress of a migration that counts as applied is stale (an older release, which
    ///   knows no progress, applied it by its level) and dropped.
    package init(decoding stored: StoredRecord) {
        self.init(applied: stored.applied, baseline: stored.baseline, appVersion: stored.appVersion)
        if let level = stored.level, self.level.map({ level > $0 }) ?? true {
            setBaseline(level)
        }
        for progress in stored.inProgress where !isApplied(progress.version) {
            setProgress(progress)
        }
    }
}

extension StoredRecord {
    /// The fingerprint stored as `text` for `version` of `manager`, read by both SQL products.
    /// A damaged one is an error, never dropped: dropped, it would read as "recorded before
    /// fingerprints" and hide an edit.
    package static func fingerprint(
        _ text: String?, of version: Version, manager: String, store: @autoclosure () -> String, table: String
    ) throws -> MigrationFingerprint? {
        guard let text else { return nil }
        guard let fingerprint = MigrationFingerprint(stored: text) else {
            throw MigrationError.unreadableState(
                manager: manager, store: store(),
                reason: "the fingerprint of \(version) in table \(table) is \(text.debugDescription), not algorithm:digest")
        }
        return fingerprint
    }
}
