import StoreMigrations

/// The keys of preferences as snapshot entries: each key path down to a value that is not a
/// dictionary (`notes.sortOrder`), with the kind of that value, so that a key a fresh install
/// writes must be in an upgraded store, with a value of the same kind.
enum PreferenceKeys {
    static func entries(_ preferences: Preferences, levelsKey: String) -> [SnapshotEntry] {
        var entries: [SnapshotEntry] = []
        var pending = preferences.values.filter { $0.key != levelsKey }.map { (path: $0.key, value: $0.value) }
        while let (path, value) = pending.popLast() {
            if case .dictionary(let children) = value, !children.isEmpty {
                pending += children.map { (path: path + "." + $0.key, value: $0.value) }
            } else {
                entries.append(SnapshotEntry(.keys, "key \(path)", value.kindDescription))
            }
        }
        return entries.sorted { $0.location < $1.location }
    }
}
