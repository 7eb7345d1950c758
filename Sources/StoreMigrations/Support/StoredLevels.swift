/// The managers' states as the file-backed stores keep them on disk: a dictionary from manager
/// name to `{"level": "1.2", "appVersion": "2.0"}`, versions written as their text.
///
/// Fields this version of the library does not know are kept as they are, so an older app never
/// erases what a newer one recorded. Every entry is validated when read: a malformed level is an
/// error, never a missing one.
struct StoredLevels: Equatable {
    /// Why the stored levels are malformed; the store wraps it in its own error naming the file.
    struct Invalid: Error {
        let manager: String?
        let reason: String
    }

    private static let levelField = "level"
    private static let appVersionField = "appVersion"

    private var entries: [String: [String: PreferenceValue]]
    /// The state of every manager with an entry.
    private(set) var states: [String: ManagerState]

    /// No levels recorded.
    init() {
        entries = [:]
        states = [:]
    }

    /// Reads the levels stored as `value`; `nil` (nothing stored) means no levels.
    init(_ value: PreferenceValue?) throws(Invalid) {
        self.init()
        guard let value else { return }
        guard case .dictionary(let managers) = value else {
            throw Invalid(manager: nil, reason: "is \(value.kindDescription), not a dictionary of managers")
        }
        for (manager, entryValue) in managers {
            guard case .dictionary(let entry) = entryValue else {
                throw Invalid(manager: manager, reason: "is \(entryValue.kindDescription), not a dictionary")
            }
            entries[manager] = entry
            states[manager] = ManagerState(
                level: try Self.version(Self.levelField, in: entry, of: manager),
                appVersion: try Self.version(Self.appVersionField, in: entry, of: manager))
        }
    }

    /// The levels as they are stored, or `nil` when no manager has an entry.
    var value: PreferenceValue? {
        entries.isEmpty ? nil : .dictionary(entries.mapValues(PreferenceValue.dictionary))
    }

    /// Records `state` for `manager`; a state with neither field removes the manager's known
    /// fields, and its entry when nothing else is left in it.
    mutating func set(_ state: ManagerState, of manager: String) {
        var entry = entries[manager] ?? [:]
        entry[Self.levelField] = state.level.map { .string($0.description) }
        entry[Self.appVersionField] = state.appVersion.map { .string($0.description) }
        entries[manager] = entry.isEmpty ? nil : entry
        states[manager] = entry.isEmpty ? nil : state
    }

    /// Forgets everything recorded for `manager`.
    mutating func remove(_ manager: String) {
        entries[manager] = nil
        states[manager] = nil
    }

    private static func version(_ field: String, in entry: [String: PreferenceValue], of manager: String) throws(Invalid) -> Version? {
        guard let value = entry[field] else { return nil }
        guard case .string(let text) = value else {
            throw Invalid(manager: manager, reason: "has a \"\(field)\" that is \(value.kindDescription), not a version string")
        }
        do {
            return try Version(parsing: text)
        } catch {
            throw Invalid(manager: manager, reason: "has a \"\(field)\" that is not a version: \(error)")
        }
    }
}
