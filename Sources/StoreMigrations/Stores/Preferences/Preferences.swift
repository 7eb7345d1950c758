import Foundation

/// The contents of a preferences file, as a ``PreferencesStore`` or ``UserDefaultsStore``
/// migration body edits them: a dictionary of property-list values.
///
/// ```swift
/// settings.register("1.1") { prefs in
///     try prefs.renameKey("showHelp", to: "onboarding.showHelp")
///     if let size = prefs.int("fontSize") {
///         try prefs.set(Double(size) * 1.5, for: ["text", "scale"])
///         prefs.removeValue(for: "fontSize")
///     }
/// }
/// ```
///
/// A key is the key you wrote, as `UserDefaults` reads it: `"onboarding.showHelp"` and
/// `"com.example.flag"` are top-level keys, dots included. A value inside a nested dictionary is
/// reached only by a path spelled as one (``PreferenceKeyPath``): `["text", "scale"]` is key
/// `scale` inside dictionary `text`. Typed getters
/// return `nil` both when nothing is stored and when another kind of value is; they convert only
/// where nothing is lost (whole `Double`s to `Int`, `Int`s to `Double`, ISO 8601 strings to
/// `Date`).
public struct Preferences: Sendable, Hashable {
    /// The top-level entries.
    public private(set) var values: [String: PreferenceValue]
    /// What the step's report shows of the body's edits (a rename that found nothing to move),
    /// taken by the step executor; not part of the value, so a body that only notes writes
    /// nothing.
    private var notes: [String] = []

    /// Preferences holding `values`.
    public init(_ values: [String: PreferenceValue] = [:]) {
        self.values = values
    }

    public static func == (lhs: Preferences, rhs: Preferences) -> Bool {
        lhs.values == rhs.values
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(values)
    }

    /// The top-level keys, sorted.
    public var keys: [String] { values.keys.sorted() }

    /// The value at `path`, or `nil` when there is none.
    public subscript(_ path: PreferenceKeyPath) -> PreferenceValue? {
        var current = PreferenceValue.dictionary(values)
        for key in path.components {
            guard case .dictionary(let dictionary) = current, let next = dictionary[key] else { return nil }
            current = next
        }
        return current
    }

    /// Whether a value is stored at `path`.
    public func contains(_ path: PreferenceKeyPath) -> Bool {
        self[path] != nil
    }

    /// The value at `path` as a `Value`, or `nil` when there is none or it holds another kind.
    ///
    /// ```swift
    /// let recent = prefs.value("recentSearches", as: [String].self) ?? []
    /// ```
    public func value<Value: PreferenceConvertible>(_ path: PreferenceKeyPath, as type: Value.Type = Value.self) -> Value? {
        self[path].flatMap(Value.init(preferenceValue:))
    }

    /// The string at `path`.
    public func string(_ path: PreferenceKeyPath) -> String? { value(path, as: String.self) }
    /// The integer at `path`; a whole `Double` that fits is converted.
    public func int(_ path: PreferenceKeyPath) -> Int? { value(path, as: Int.self) }
    /// The number at `path`; an integer is converted when exactly representable.
    public func double(_ path: PreferenceKeyPath) -> Double? { value(path, as: Double.self) }
    /// The Boolean at `path`; the integers 0 and 1 are not Booleans.
    public func bool(_ path: PreferenceKeyPath) -> Bool? { value(path, as: Bool.self) }
    /// The date at `path`; an ISO 8601 string is parsed.
    public func date(_ path: PreferenceKeyPath) -> Date? { value(path, as: Date.self) }
    /// The bytes at `path`.
    public func data(_ path: PreferenceKeyPath) -> Data? { value(path, as: Data.self) }
    /// The array at `path`, whatever its elements.
    public func array(_ path: PreferenceKeyPath) -> [PreferenceValue]? { value(path, as: [PreferenceValue].self) }
    /// The dictionary at `path`, whatever its values.
    public func dictionary(_ path: PreferenceKeyPath) -> [String: PreferenceValue]? {
        value(path, as: [String: PreferenceValue].self)
    }

    /// Stores `value` at `path`, replacing what was there and creating missing parent dictionaries.
    ///
    /// ```swift
    /// try prefs.set(true, for: "onboarding.showHelp")         // the top-level key, dot included
    /// try prefs.set(["w": 800, "h": 600], for: "window")      // [String: Int]
    /// try prefs.set(800, for: ["window", "w"])                // inside the dictionary "window"
    /// ```
    ///
    /// - Throws: ``PreferencesError/notADictionary(path:blockingPath:found:)`` when a parent
    ///   holds a value that is not a dictionary; nothing changes then.
    public mutating func set(_ value: some PreferenceConvertible, for path: PreferenceKeyPath) throws {
        try Self.set(value.preferenceValue, at: path.components[...], in: &values, path: path)
    }

    /// Removes the value at `path` and returns it, or returns `nil` when there is none.
    ///
    /// Parent dictionaries stay, even when the removal empties them.
    @discardableResult
    public mutating func removeValue(for path: PreferenceKeyPath) -> PreferenceValue? {
        Self.remove(at: path.components[...], in: &values)
    }

    /// Moves the value at `source` to `destination`, which may be in another dictionary.
    ///
    /// Moves nothing and returns `false` when `source` holds no value, so a body that renames can
    /// safely meet files that never had the key; the step's line of the run's report then notes
    /// the rename that found nothing (``MigrationReport/Step/notes``), so that a key misspelled
    /// is seen rather than silently applied. Missing parents of `destination` are created;
    /// `source`'s parents stay. A path may move into its own former place
    /// (`"showHelp"` → `["showHelp", "enabled"]`).
    ///
    /// ```swift
    /// try prefs.renameKey("com.example.showHelp", to: "onboarding.showHelp")   // two top-level keys
    /// try prefs.renameKey("launchCount", to: ["stats", "launchCount"])         // into a dictionary
    /// ```
    ///
    /// - Returns: `true` when a value was moved (or `source` equals `destination` and holds one).
    /// - Throws: ``PreferencesError/destinationExists(source:destination:)`` when `destination`
    ///   already holds a value (remove it first to replace it), or
    ///   ``PreferencesError/notADictionary(path:blockingPath:found:)``. Nothing changes then.
    @discardableResult
    public mutating func renameKey(_ source: PreferenceKeyPath, to destination: PreferenceKeyPath) throws -> Bool {
        guard source != destination else { return contains(source) }
        // Edited in place rather than on a copy: copying the preferences for every rename made a
        // migration renaming many keys of a large file quadratic. A failure puts the value back.
        guard let value = removeValue(for: source) else {
            notes.append("renameKey found no value at \"\(source)\"; nothing was moved to \"\(destination)\"")
            return false
        }
        do {
            if contains(destination) {
                throw PreferencesError.destinationExists(source: source, destination: destination)
            }
            try set(value, for: destination)
        } catch {
            // The source's parents stayed when it was removed, so this cannot fail.
            try? set(value, for: source)
            throw error
        }
        return true
    }

    private static func set(
        _ value: PreferenceValue, at keys: ArraySlice<String>, in dictionary: inout [String: PreferenceValue],
        path: PreferenceKeyPath
    ) throws {
        let key = keys.first!
        guard keys.count > 1 else {
            dictionary[key] = value
            return
        }
        var child: [String: PreferenceValue]
        switch dictionary[key] {
        case nil:
            child = [:]
        case .dictionary?:
            // Taken out of its parent, so that editing it does not copy it.
            guard case .dictionary(let existing)? = dictionary.removeValue(forKey: key) else { return }
            child = existing
        case let other?:
            let depth = path.components.count - keys.count + 1
            throw PreferencesError.notADictionary(
                path: path, blockingPath: PreferenceKeyPath(Array(path.components.prefix(depth))),
                found: other.kindDescription)
        }
        defer { dictionary[key] = .dictionary(child) }
        try set(value, at: keys.dropFirst(), in: &child, path: path)
    }

    private static func remove(at keys: ArraySlice<String>, in dictionary: inout [String: PreferenceValue]) -> PreferenceValue? {
        let key = keys.first!
        guard keys.count > 1 else { return dictionary.removeValue(forKey: key) }
        guard case .dictionary? = dictionary[key],
              case .dictionary(var child)? = dictionary.removeValue(forKey: key)
        else { return nil }
        defer { dictionary[key] = .dictionary(child) }
        return remove(at: keys.dropFirst(), in: &child)
    }
}

extension Preferences: StepNotesCarrier {
    package mutating func takeStepNotes() -> [String] {
        defer { notes = [] }
        return notes
    }
}
