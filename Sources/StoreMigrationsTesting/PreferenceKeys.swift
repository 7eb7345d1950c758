import Foundation
import StoreMigrations

/// The keys of preferences as snapshot entries: each key path down to a value that is not a
/// dictionary (`notes.sortOrder`), with the kind of that value, so that a key a fresh install
/// writes must be in an upgraded store, with a value of the same kind; or, for two fresh
/// installs, with the value itself.
enum PreferenceKeys {
    static func entries(_ preferences: Preferences, levelsKey: String) -> [SnapshotEntry] {
        leaves(of: preferences, levelsKey: levelsKey).map { SnapshotEntry(.keys, "key \($0.path)", $0.value.kindDescription) }
    }

    /// Each key path with its value, for two fresh installs, which must hold the same values.
    static func contents(_ preferences: Preferences, levelsKey: String) -> [SnapshotEntry] {
        leaves(of: preferences, levelsKey: levelsKey).map { SnapshotEntry(.content, "key \($0.path)", rendered($0.value)) }
    }

    private static func leaves(of preferences: Preferences, levelsKey: String) -> [(path: String, value: PreferenceValue)] {
        var leaves: [(path: String, value: PreferenceValue)] = []
        var pending = preferences.values.filter { $0.key != levelsKey }.map { (path: $0.key, value: $0.value) }
        while let (path, value) = pending.popLast() {
            if case .dictionary(let children) = value, !children.isEmpty {
                pending += children.map { (path: path + "." + $0.key, value: $0.value) }
            } else {
                leaves.append((path, value))
            }
        }
        return leaves.sorted { $0.path < $1.path }
    }

    /// The value with its kind, dictionaries in key order so that equal values read alike.
    private static func rendered(_ value: PreferenceValue) -> String {
        switch value {
        case .string(let text): return "a string \"\(text)\""
        case .array(let items): return "an array [" + items.map(rendered).joined(separator: ", ") + "]"
        case .dictionary(let children):
            return "a dictionary [" + children.sorted { $0.key < $1.key }.map { "\($0.key): \(rendered($0.value))" }
                .joined(separator: ", ") + "]"
        case .int(let number): return "an integer \(number)"
        case .double(let number): return "a floating-point number \(number)"
        case .bool(let flag): return "a Boolean \(flag)"
        case .date(let date): return "a date \(date.timeIntervalSinceReferenceDate)"
        case .data(let bytes): return "data \(bytes.base64EncodedString())"
        case .null: return "null"
        }
    }
}
