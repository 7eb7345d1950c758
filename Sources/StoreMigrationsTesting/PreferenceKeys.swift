import StoreMigrations

/// The keys of preferences as snapshot entries: each key with the kind of its value, so that a
/// key a fresh install writes must be in an upgraded store, with a value of the same kind.
enum PreferenceKeys {
    static func entries(_ preferences: Preferences, levelsKey: String) -> [SnapshotEntry] {
        preferences.keys.filter { $0 != levelsKey }.map { key in
            SnapshotEntry(.keys, "key \(key)", kind(of: preferences.values[key] ?? .null))
        }
    }

    private static func kind(of value: PreferenceValue) -> String {
        switch value {
        case .string: return "a string"
        case .int: return "an integer"
        case .double: return "a floating-point number"
        case .bool: return "a Boolean"
        case .date: return "a date"
        case .data: return "data"
        case .array: return "an array"
        case .dictionary: return "a dictionary"
        case .null: return "null"
        }
    }
}
