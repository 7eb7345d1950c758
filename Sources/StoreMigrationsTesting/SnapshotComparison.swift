import StoreMigrations

/// Compares two snapshots entry by entry: a fresh install's with an upgraded store's, or two
/// fresh installs'.
enum SnapshotComparison {
    /// One entry that differs: `expected` is what the reference side has, `actual` the other.
    struct Mismatch {
        let aspect: SnapshotEntry.Aspect
        let location: String
        let expected: String?
        let actual: String?
    }

    /// Every entry whose value differs or that one side lacks; `actual` may have keys that
    /// `expected` lacks when `actualMayAddKeys` (an upgraded store keeps the user's own).
    static func mismatches(expected: [SnapshotEntry], actual: [SnapshotEntry], actualMayAddKeys: Bool) -> [Mismatch] {
        struct Key: Hashable {
            let aspect: SnapshotEntry.Aspect
            let location: String
        }
        let actualValues = Dictionary(actual.map { (Key(aspect: $0.aspect, location: $0.location), $0.value) }) { first, _ in first }
        let expectedKeys = Set(expected.map { Key(aspect: $0.aspect, location: $0.location) })
        var mismatches: [Mismatch] = []
        for entry in expected {
            let other = actualValues[Key(aspect: entry.aspect, location: entry.location)]
            if other != entry.value {
                mismatches.append(Mismatch(aspect: entry.aspect, location: entry.location, expected: entry.value, actual: other))
            }
        }
        for entry in actual where !(actualMayAddKeys && entry.aspect == .keys)
            && !expectedKeys.contains(Key(aspect: entry.aspect, location: entry.location)) {
            mismatches.append(Mismatch(aspect: entry.aspect, location: entry.location, expected: nil, actual: entry.value))
        }
        return mismatches
    }

    /// The differences of an upgraded store from a fresh install: schema and records both ways,
    /// keys only those the fresh install writes.
    static func differences(
        fresh: [SnapshotEntry], upgraded: [SnapshotEntry], store: String, from version: Version
    ) -> [UpgradeDifference] {
        mismatches(expected: fresh, actual: upgraded, actualMayAddKeys: true).map { mismatch in
            UpgradeDifference(
                store: store, upgradedFrom: version, kind: UpgradeDifference.Kind(mismatch.aspect), location: mismatch.location,
                fresh: mismatch.expected, upgraded: mismatch.actual)
        }
    }
}

extension UpgradeDifference.Kind {
    init(_ aspect: SnapshotEntry.Aspect) {
        switch aspect {
        case .schema: self = .schema
        case .records: self = .records
        case .keys: self = .keys
        case .content: self = .content
        }
    }
}
