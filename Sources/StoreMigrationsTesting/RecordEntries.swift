import StoreMigrations

/// A store's records as snapshot entries: for each manager, which of its registered migrations
/// count as applied (in the set or under the baseline mark), what is in progress, and what the
/// record holds that the code no longer registers. How a migration came to count as applied (run
/// or baselined) is not compared, only explained (``baselines(_:)``).
enum RecordEntries {
    static func entries(_ managers: [RegisteredManager], records: [String: MigrationRecord]) -> [SnapshotEntry] {
        managers.map { manager in
            let record = records[manager.name] ?? MigrationRecord()
            var parts = ["applied " + list(manager.versions.filter { record.isApplied($0) })]
            let registered = Set(manager.versions)
            let unknown = record.appliedVersions.filter { !registered.contains($0) }
            if !unknown.isEmpty { parts.append("recorded but not registered " + list(unknown)) }
            if !record.inProgress.isEmpty { parts.append("in progress " + list(record.inProgress.map(\.version))) }
            return SnapshotEntry(.records, "records of \(manager.name)", parts.joined(separator: "; "))
        }
    }

    /// A store's records as two fresh installs must both have them: for each registered
    /// migration of each manager, whether it is applied, and with which name and fingerprint,
    /// or under the baseline mark; the app version the hook last ran for; what is in progress or
    /// recorded but not registered. When each migration was applied and how long it took are
    /// left out: they differ from one install to the next, and a squash records the whole step's
    /// time under its own version and none under the others it replaces.
    static func labelledEntries(_ managers: [RegisteredManager], records: [String: MigrationRecord]) -> [SnapshotEntry] {
        managers.flatMap { manager in
            let record = records[manager.name] ?? MigrationRecord()
            var entries = manager.versions.map { version in
                SnapshotEntry(.records, "records of \(manager.name), migration \(version)", label(version, in: record))
            }
            let registered = Set(manager.versions)
            let unknown = record.appliedVersions.filter { !registered.contains($0) }
            if !unknown.isEmpty {
                entries.append(SnapshotEntry(.records, "records of \(manager.name), not registered", list(unknown)))
            }
            if !record.inProgress.isEmpty {
                entries.append(SnapshotEntry(.records, "records of \(manager.name), in progress", list(record.inProgress.map(\.version))))
            }
            entries.append(SnapshotEntry(
                .records, "records of \(manager.name), app version of the hook", record.appVersion?.description ?? "none"))
            return entries
        }
    }

    private static func label(_ version: Version, in record: MigrationRecord) -> String {
        guard let applied = record.appliedMigration(version) else {
            return record.isApplied(version) ? "applied by the baseline mark \(record.baseline?.description ?? "")" : "not applied"
        }
        return "applied, named " + (applied.name.map { "\"\($0)\"" } ?? "nothing") + ", fingerprint "
            + (applied.fingerprint?.description ?? "none")
    }

    /// `library: 1.1, 1.2 by the baseline 1.2`, for each manager with migrations applied by a
    /// baseline mark rather than run.
    static func baselines(_ managers: [RegisteredManager], records: [String: MigrationRecord]) -> [String] {
        managers.compactMap { manager in
            guard let record = records[manager.name], let baseline = record.baseline else { return nil }
            let ran = Set(record.appliedVersions)
            let byBaseline = manager.versions.filter { $0 <= baseline && !ran.contains($0) }
            guard !byBaseline.isEmpty else { return nil }
            return "\(manager.name): \(list(byBaseline)) by the baseline \(baseline)"
        }
    }

    private static func list(_ versions: [Version]) -> String {
        versions.isEmpty ? "none" : versions.map(\.description).joined(separator: ", ")
    }
}
