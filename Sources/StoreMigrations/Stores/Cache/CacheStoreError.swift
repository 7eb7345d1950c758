import Foundation

/// A ``CacheStore`` cannot read its level marker, or a ``CacheDirectory`` helper was given a path
/// it refuses. Nothing is changed when one is thrown.
///
/// ```swift
/// do {
///     _ = try cacheStore.readStates()
/// } catch let error as CacheStoreError {
///     print(error) // "The level marker /…/Thumbnails/.store-migrations.json is not valid: …"
/// }
/// ```
public enum CacheStoreError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// The marker file recording the levels does not hold valid levels.
    case invalidMarker(file: String, reason: String, migration: MigrationReference?)
    /// A helper was given a path that is absolute, leaves the directory (`..`), names the
    /// directory itself, or names one of the store's own files.
    case invalidPath(path: String, directory: String, reason: String, migration: MigrationReference?)

    /// The message: what failed, where, and what to do.
    public var description: String {
        switch self {
        case let .invalidMarker(file, reason, migration):
            let during = migration.map { " (read for migration \($0))" } ?? ""
            return "The level marker \(file)\(during) is not valid: \(reason). Nothing was migrated "
                + "and the marker was left as it is. Repair it, or delete it (or the whole cache "
                + "directory) to have the cache's migrations run again."
        case let .invalidPath(path, directory, reason, migration):
            let by = migration.map { "Migration \($0) passed" } ?? "A caller passed"
            return "\(by) \"\(path)\" to a helper of the cache directory \(directory): \(reason). "
                + "Nothing was changed by that call. Pass paths relative to the directory, such as "
                + "\"thumbnails/a.png\", without \"..\"; the store's own "
                + "\(CacheStore.markerName) and \(CacheStore.lockName) are off limits."
        }
    }

    /// The same message as ``description``.
    public var errorDescription: String? { description }
}

extension CacheStoreError: MigrationAttributableError {
    package func attributed(to migration: MigrationReference) -> any Error {
        switch self {
        case let .invalidMarker(file, reason, nil):
            return CacheStoreError.invalidMarker(file: file, reason: reason, migration: migration)
        case let .invalidPath(path, directory, reason, nil):
            return CacheStoreError.invalidPath(path: path, directory: directory, reason: reason, migration: migration)
        case .invalidMarker, .invalidPath:
            return self
        }
    }
}
