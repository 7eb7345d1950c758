import Foundation

/// A `UserDefaults` domain cannot be read or written by a ``UserDefaultsStore``. The domain is
/// always left as it was.
///
/// ```swift
/// do {
///     try coordinator.run()
/// } catch let error as UserDefaultsStoreError {
///     print(error) // "The levels recorded in user defaults suite group.com.example.notes …"
/// }
/// ```
public enum UserDefaultsStoreError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// `UserDefaults(suiteName:)` refused the suite's name (on Apple platforms: the app's own
    /// bundle identifier, or `NSGlobalDomain`).
    case unavailableSuite(suite: String, migration: MigrationReference?)
    /// The records under ``UserDefaultsStore/levelsKey`` are malformed; `manager` names the entry
    /// at fault when one is.
    case invalidLevels(suite: String, manager: String?, reason: String, migration: MigrationReference?)
    /// The domain holds, at `key`, a value ``Preferences`` cannot hold.
    case unsupportedValue(suite: String, key: PreferenceKeyPath, reason: String, migration: MigrationReference?)
    /// A migration left ``PreferenceValue/null`` at `key`; `UserDefaults` has no null.
    case nullValue(suite: String, key: PreferenceKeyPath, migration: MigrationReference?)
    /// A migration stored a value under ``UserDefaultsStore/levelsKey``, which the store reserves.
    case reservedKey(suite: String, migration: MigrationReference?)
    /// The domain's property list `file` exists but does not parse (Linux), as a kill during
    /// Foundation's in-place rewrite leaves it; Foundation would read it as empty defaults.
    case damagedDomain(suite: String, file: String, reason: String, migration: MigrationReference?)
    /// `synchronize()` reported that the domain could not be written to disk (Linux); the domain
    /// was put back as it was.
    case writeFailed(suite: String, migration: MigrationReference?)

    /// The message: what failed, where, and what to do.
    public var description: String {
        switch self {
        case let .unavailableSuite(suite, migration):
            return "UserDefaults refused the suite \"\(suite)\"\(Self.during(migration)). Nothing was "
                + "migrated. Use another suite name: not the app's bundle identifier nor NSGlobalDomain "
                + "(pass nil for the app's own defaults)."
        case let .invalidLevels(suite, manager, reason, migration):
            let entry = manager.map { "the entry of manager \"\($0)\"" } ?? "the entry"
            return "The levels recorded in user defaults suite \(suite)\(Self.during(migration)) under "
                + "the key \"\(UserDefaultsStore.levelsKey)\" are invalid: \(entry) \(reason). Nothing "
                + "was migrated and the defaults were left as they are. Repair \(entry) (each manager "
                + "maps to {level, applied, appVersion}), or remove it to start that manager over."
        case let .unsupportedValue(suite, key, reason, migration):
            return "User defaults suite \(suite)\(Self.during(migration)) holds at \"\(key)\" a value "
                + "preferences cannot hold: \(reason). Nothing was migrated. Remove or convert that "
                + "value before migrating."
        case let .nullValue(suite, key, migration):
            return "Migration \(migration.map(\.description) ?? "(none)") set \"\(key)\" to null, which "
                + "user defaults suite \(suite) cannot hold. Nothing was written. Remove the key "
                + "(removeValue(for: \"\(key)\")) instead of setting it to null."
        case let .reservedKey(suite, migration):
            return "Migration \(migration.map(\.description) ?? "(none)") stored a value under "
                + "\"\(UserDefaultsStore.levelsKey)\", the key where user defaults suite \(suite) keeps "
                + "the migration levels. Nothing was written. Use another key."
        case let .damagedDomain(suite, file, reason, migration):
            return "User defaults suite \(suite)\(Self.during(migration)) is kept in \(file), which "
                + "\(reason); Foundation would read it as empty defaults. Nothing was migrated and the "
                + "file was left as it is. Restore the file from a backup; delete it only to start the "
                + "suite over with empty defaults (its migrations then run again)."
        case let .writeFailed(suite, migration):
            return "User defaults suite \(suite) could not be written to disk\(Self.during(migration)). "
                + "Nothing was migrated and the defaults were put back as they were. Check that the "
                + "preferences folder (~/.config or $XDG_CONFIG_HOME) is writable and not full."
        }
    }

    /// The same message as ``description``.
    public var errorDescription: String? { description }

    private static func during(_ migration: MigrationReference?) -> String {
        migration.map { " (for migration \($0))" } ?? ""
    }
}

extension UserDefaultsStoreError: MigrationAttributableError {
    package func attributed(to migration: MigrationReference) -> any Error {
        switch self {
        case let .unavailableSuite(suite, nil):
            return Self.unavailableSuite(suite: suite, migration: migration)
        case let .invalidLevels(suite, manager, reason, nil):
            return Self.invalidLevels(suite: suite, manager: manager, reason: reason, migration: migration)
        case let .unsupportedValue(suite, key, reason, nil):
            return Self.unsupportedValue(suite: suite, key: key, reason: reason, migration: migration)
        case let .nullValue(suite, key, nil):
            return Self.nullValue(suite: suite, key: key, migration: migration)
        case let .reservedKey(suite, nil):
            return Self.reservedKey(suite: suite, migration: migration)
        case let .damagedDomain(suite, file, reason, nil):
            return Self.damagedDomain(suite: suite, file: file, reason: reason, migration: migration)
        case let .writeFailed(suite, nil):
            return Self.writeFailed(suite: suite, migration: migration)
        case .unavailableSuite, .invalidLevels, .unsupportedValue, .nullValue, .reservedKey, .damagedDomain,
            .writeFailed:
            return self
        }
    }
}
