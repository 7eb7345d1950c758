import StoreMigrations

/// Compares the snapshot of a fresh install with that of an upgraded store, entry by entry.
enum SnapshotComparison {
    static func differences(
        fresh: [SnapshotEntry], upgraded: [SnapshotEntry], store: String, from version: Version
    ) -> [UpgradeDifference] {
        struct Key: Hashable {
            let aspect: SnapshotEntry.Aspect
            let location: String
        }
        let upgradedValues = Dictionary(upgraded.map { (Key(aspect: $0.aspect, location: $0.location), $0.value) }) { first, _ in first }
        let freshKeys = Set(fresh.map { Key(aspect: $0.aspect, location: $0.location) })
        func difference(_ entry: SnapshotEntry, fresh: String?, upgraded: String?) -> UpgradeDifference {
            UpgradeDifference(
                store: store, upgradedFrom: version, kind: kind(of: entry.aspect), location: entry.location,
                fresh: fresh, upgraded: upgraded)
        }
        var differences: [UpgradeDifference] = []
        for entry in fresh {
            let other = upgradedValues[Key(aspect: entry.aspect, location: entry.location)]
            if other != entry.value { differences.append(difference(entry, fresh: entry.value, upgraded: other)) }
        }
        // Keys only the upgraded store has are the user's own; schema and records must match both ways.
        for entry in upgraded where entry.aspect != .keys && !freshKeys.contains(Key(aspect: entry.aspect, location: entry.location)) {
            differences.append(difference(entry, fresh: nil, upgraded: entry.value))
        }
        return differences
    }

    private static func kind(of aspect: SnapshotEntry.Aspect) -> UpgradeDifference.Kind {
        switch aspect {
        case .schema: return .schema
        case .records: return .records
        case .keys: return .keys
        }
    }
}
