import Foundation

/// A preferences file cannot be read or written by a ``PreferencesStore``. The file is always
/// left as it was.
///
/// ```swift
/// do {
///     _ = try store.readStates()
/// } catch let error as PreferencesStoreError {
///     print(error) // "The preferences file /…/prefs.json is not valid JSON: … "
/// }
/// ```
public enum PreferencesStoreError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// The file does not hold a dictionary in the store's format (it is empty, truncated, not
    /// JSON or not a property list, or holds a value, such as a set, that preferences cannot).
    case unreadableFile(file: String, format: PreferencesStore.Format, reason: String, migration: MigrationReference?)
    /// The levels recorded under ``PreferencesStore/levelsKey`` are malformed; `manager` names the
    /// entry at fault when one is.
    case invalidLevels(file: String, manager: String?, reason: String, migration: MigrationReference?)
    /// A migration left a value the format cannot hold, such as a NaN in a JSON file.
    case unencodableValue(file: String, format: PreferencesStore.Format, reason: String, migration: MigrationReference?)
    /// A migration stored a value under ``PreferencesStore/levelsKey``, which the store reserves.
    case reservedKey(file: String, migration: MigrationReference?)
    /// A migration left ``PreferenceValue/null`` at `key` in a property-list file, which has no
    /// null.
    case nullValue(file: String, key: PreferenceKeyPath, migration: MigrationReference?)

    /// The message: what failed, where, and what to do.
    public var description: String {
        switch self {
        case let .unreadableFile(file, format, reason, migration):
            return "The preferences file \(file)\(Self.during(migration)) is not a valid "
                + "\(format.name) dictionary: \(reason). Nothing was migrated and the file was left "
                + "as it is. Restore it from a backup or repair it; delete it only to start over "
                + "with empty preferences (its migrations then run again)."
        case let .invalidLevels(file, manager, reason, migration):
            let entry = manager.map { "the entry of manager \"\($0)\"" } ?? "the entry"
            return "The levels recorded in \(file)\(Self.during(migration)) under the key "
                + "\"\(PreferencesStore.levelsKey)\" are invalid: \(entry) \(reason). Nothing was "
                + "migrated and the file was left as it is. Repair \(entry) (each manager maps to "
                + "{\"level\": \"1.2\", \"applied\": [\"1.1\", \"1.2\"], \"appVersion\": \"2.0\"}, "
                + "each optional), or remove it to start that manager over."
        case let .unencodableValue(file, format, reason, migration):
            return "Migration \(migration.map(\.description) ?? "(none)") left preferences that "
                + "\(file) cannot hold as \(format.name): \(reason). Nothing was written. Store the "
                + "value in another form (a string, for instance), or use another format."
        case let .reservedKey(file, migration):
            return "Migration \(migration.map(\.description) ?? "(none)") stored a value under "
                + "\"\(PreferencesStore.levelsKey)\", the key where \(file) keeps the migration "
                + "levels. Nothing was written. Use another key."
        case let .nullValue(file, key, migration):
            return "Migration \(migration.map(\.description) ?? "(none)") set \"\(key)\" to null, which "
                + "the property list \(file) cannot hold. Nothing was written. Remove the key "
                + "(removeValue(for: \"\(key)\")) instead of setting it to null."
        }
    }

    /// The same message as ``description``.
    public var errorDescription: String? { description }

    private static func during(_ migration: MigrationReference?) -> String {
        migration.map { " (read for migration \($0))" } ?? ""
    }
}

extension PreferencesStoreError: MigrationAttributableError {
    package func attributed(to migration: MigrationReference) -> any Error {
        switch self {
        case let .unreadableFile(file, format, reason, nil):
            return PreferencesStoreError.unreadableFile(file: file, format: format, reason: reason, migration: migration)
        case let .invalidLevels(file, manager, reason, nil):
            return PreferencesStoreError.invalidLevels(file: file, manager: manager, reason: reason, migration: migration)
        case let .unencodableValue(file, format, reason, nil):
            return PreferencesStoreError.unencodableValue(file: file, format: format, reason: reason, migration: migration)
        case let .reservedKey(file, nil):
            return PreferencesStoreError.reservedKey(file: file, migration: migration)
        case let .nullValue(file, key, nil):
            return PreferencesStoreError.nullValue(file: file, key: key, migration: migration)
        case .unreadableFile, .invalidLevels, .unencodableValue, .reservedKey, .nullValue:
            return self
        }
    }
}
