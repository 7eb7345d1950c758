/// Which path a store takes through a squashed migration's range, decided from its record: the
/// squash where none of the range is applied or in progress, the replaced migrations where part
/// of it is, nothing where all of it is.
enum SquashPath {
    /// What of `range` the record shows done: the applied versions in it (a baseline mark at or
    /// past its start counts as the start applied), and whether any migration in it is in progress.
    static func progress(in range: ClosedRange<Version>, of record: MigrationRecord?) -> (applied: [Version], inProgress: Bool) {
        guard let record else { return ([], false) }
        var applied: [Version] = []
        if let baseline = record.baseline, baseline >= range.lowerBound { applied.append(min(baseline, range.upperBound)) }
        let start = MigrationGraph.partition(record.appliedVersions) { $0 >= range.lowerBound }
        for migration in record.applied[start...] {
            guard migration.version <= range.upperBound else { break }
            if applied.last != migration.version { applied.append(migration.version) }
        }
        return (applied, record.inProgress.contains { range.contains($0.version) })
    }

    /// Whether a store must run the replaced migrations rather than the squash: some of the range
    /// is applied or in progress, but not its last version.
    static func isPartWay(_ range: ClosedRange<Version>, in record: MigrationRecord?) -> Bool {
        let progress = progress(in: range, of: record)
        guard !progress.applied.isEmpty || progress.inProgress else { return false }
        return !(record?.isApplied(range.upperBound) ?? false)
    }
}
