import Foundation

/// What a store records for one manager: which of its migrations are applied, a baseline mark
/// below which everything counts as applied, and the app version its app-version-change hook
/// last ran for.
///
/// A migration is applied when it is in ``applied`` or at or below ``baseline``. Keeping the set,
/// not only the highest version, is what lets a migration registered late (a branch merged after
/// a higher version shipped) be found and run, as GRDB and Django do.
///
/// ```swift
/// let record = try library.record()
/// record.level                  // 1.2
/// record.isApplied("1.1.1")     // false: a late migration, pending
/// for migration in record.applied { print(migration.version, migration.appliedAt ?? "") }
/// ```
public struct MigrationRecord: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The migrations applied, ascending by version, each once.
    public private(set) var applied: [AppliedMigration]
    /// Everything at or below this version counts as applied: set by a baseline, and read from
    /// stores written before records held sets (their level becomes the baseline).
    public private(set) var baseline: Version?
    /// The app version the manager's app-version-change hook last ran for, or `nil`.
    public internal(set) var appVersion: Version?
    /// The resumable migrations that have committed batches but are not applied yet, ascending
    /// by version.
    public private(set) var inProgress: [StepProgress]

    /// Creates a record; `applied` may come in any order and is sorted, duplicates dropped.
    public init(
        applied: [AppliedMigration] = [], baseline: Version? = nil, appVersion: Version? = nil,
        inProgress: [StepProgress] = []
    ) {
        self.applied = Self.ascendingOnce(applied)
        self.baseline = baseline
        self.appVersion = appVersion
        self.inProgress = inProgress.sorted { $0.version < $1.version }
    }

    private enum CodingKeys: String, CodingKey { case applied, baseline, appVersion, inProgress }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            applied: try container.decode([AppliedMigration].self, forKey: .applied),
            baseline: try container.decodeIfPresent(Version.self, forKey: .baseline),
            appVersion: try container.decodeIfPresent(Version.self, forKey: .appVersion),
            // Absent from records encoded before migrations could be resumable.
            inProgress: try container.decodeIfPresent([StepProgress].self, forKey: .inProgress) ?? [])
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(applied, forKey: .applied)
        try container.encodeIfPresent(baseline, forKey: .baseline)
        try container.encodeIfPresent(appVersion, forKey: .appVersion)
        if !inProgress.isEmpty { try container.encode(inProgress, forKey: .inProgress) }
    }

    /// How far the resumable migration `version` has got, when it has committed batches and is
    /// not applied yet.
    public func progress(of version: Version) -> StepProgress? {
        inProgress.first { $0.version == version }
    }

    /// Records how far a resumable migration has got, replacing what was recorded for its version.
    mutating func setProgress(_ progress: StepProgress) {
        if let index = inProgress.firstIndex(where: { $0.version == progress.version }) {
            inProgress[index] = progress
        } else {
            inProgress.append(progress)
            inProgress.sort { $0.version < $1.version }
        }
    }

    /// Sets the baseline mark: everything at or below `version` counts as applied, so the
    /// progress of a resumable migration it covers is done with, as when it is applied.
    mutating func setBaseline(_ version: Version) {
        baseline = version
        if !inProgress.isEmpty { inProgress.removeAll { $0.version <= version } }
    }

    /// `applied` sorted by version, each version once (its first entry in sort order kept).
    /// Stores read their sets in version order already (a history in applied order, a list as
    /// written), so a set that is ascending is kept as it is, without a sort's copies.
    private static func ascendingOnce(_ applied: [AppliedMigration]) -> [AppliedMigration] {
        var isAscending = true
        applied.withUnsafeBufferPointer { migrations in
            for index in migrations.indices.dropFirst() where !(migrations[index - 1].version < migrations[index].version) {
                isAscending = false
                return
            }
        }
        if isAscending { return applied }
        var sorted: [AppliedMigration] = []
        for migration in applied.sorted(by: { $0.version < $1.version })
        where sorted.last.map({ $0.version != migration.version }) ?? true {
            sorted.append(migration)
        }
        return sorted
    }

    /// The highest version applied or covered by the baseline, or `nil` when there is none.
    public var level: Version? {
        switch (baseline, applied.last?.version) {
        case let (baseline?, last?): return max(baseline, last)
        case let (baseline, last): return baseline ?? last
        }
    }

    /// Whether nothing is recorded.
    public var isEmpty: Bool { applied.isEmpty && baseline == nil && appVersion == nil && inProgress.isEmpty }

    /// Whether `version` is applied: in ``applied``, or at or below ``baseline``.
    public func isApplied(_ version: Version) -> Bool {
        if let baseline, version <= baseline { return true }
        return index(of: version) != nil
    }

    /// The versions in ``applied``, ascending (the baseline mark is not among them).
    public var appliedVersions: [Version] { applied.map(\.version) }

    /// Records `version` as applied; a version already in the set keeps its first entry. Its
    /// progress, if it was resumable, is done with.
    mutating func markApplied(
        _ version: Version, at date: Date? = nil, duration: TimeInterval? = nil, name: String? = nil,
        fingerprint: MigrationFingerprint? = nil
    ) {
        if !inProgress.isEmpty { inProgress.removeAll { $0.version == version } }
        let position = insertionPoint(of: version)
        if position < applied.count, applied[position].version == version { return }
        let migration = AppliedMigration(version: version, appliedAt: date, duration: duration, name: name, fingerprint: fingerprint)
        // Appended, in the usual version order: an insertion at the end goes through the general
        // replacement of a range.
        if position == applied.count {
            applied.append(migration)
        } else {
            applied.insert(migration, at: position)
        }
    }

    /// Replaces the name and fingerprint recorded for the applied migration `version` (a repair
    /// that accepts an edited migration). Returns whether `version` is in ``applied`` and
    /// anything changed.
    @discardableResult
    mutating func relabel(_ version: Version, name: String?, fingerprint: MigrationFingerprint?) -> Bool {
        guard let index = index(of: version) else {
            // A resumable migration part-way: its next batches run the edited body, accepted.
            guard let progress = inProgress.firstIndex(where: { $0.version == version }),
                  inProgress[progress].fingerprint != nil, inProgress[progress].fingerprint != fingerprint
            else { return false }
            inProgress[progress].fingerprint = fingerprint
            return true
        }
        let old = applied[index]
        guard old.name != name || old.fingerprint != fingerprint else { return false }
        applied[index] = AppliedMigration(
            version: version, appliedAt: old.appliedAt, duration: old.duration, name: name, fingerprint: fingerprint)
        return true
    }

    /// The entry of the applied migration `version`, if it is in ``applied``.
    public func appliedMigration(_ version: Version) -> AppliedMigration? {
        index(of: version).map { applied[$0] }
    }

    public var description: String {
        var parts = ["level \(level?.description ?? "none")"]
        if let baseline { parts.append("baseline \(baseline)") }
        if !applied.isEmpty { parts.append("applied " + applied.map(\.version.description).joined(separator: ", ")) }
        if let appVersion { parts.append("app version \(appVersion)") }
        if !inProgress.isEmpty { parts.append("in progress " + inProgress.map(\.description).joined(separator: ", ")) }
        return parts.joined(separator: "; ")
    }

    private func index(of version: Version) -> Int? {
        let position = insertionPoint(of: version)
        return position < applied.count && applied[position].version == version ? position : nil
    }

    /// The first position whose version is not below `version`.
    private func insertionPoint(of version: Version) -> Int {
        // Migrations run in version order, so a step asks of a version past the last one applied:
        // one comparison instead of a search (two searches a step showed in runs of many steps).
        // The last version read in place: copying the last entry retains and releases its labels.
        guard !applied.isEmpty, !(applied[applied.count - 1].version < version) else { return applied.count }
        var low = 0, high = applied.count - 1
        while low < high {
            let middle = (low + high) / 2
            if applied[middle].version < version { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
