import Foundation

/// Why ``DevelopmentMode/eraseOnFingerprintChange`` refused to erase a store whose migration was
/// edited; `run()` throws it before anything runs or is erased.
public enum DevelopmentModeError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// The library was built for release, where erasing a store would erase a user's data, and
    /// the mode was not told to allow it.
    case refusedInReleaseBuild(store: String, change: FingerprintChange)
    /// The store cannot be erased: it is not an ``ErasableStore`` (a PostgreSQL database, shared
    /// by other developers and services, is not).
    case eraseNotSupported(store: String, change: FingerprintChange)
    /// The store's erase threw (`reason`, its error's text): a lock another process held past the
    /// store's timeout, a file that could not be written. The store is as it was or erased, never
    /// part-way (``ErasableStore``), and nothing was migrated.
    case eraseFailed(store: String, change: FingerprintChange, reason: String)

    public var description: String {
        switch self {
        case let .refusedInReleaseBuild(store, change):
            return "Development mode would erase \(store) because \(change), but this is a release "
                + "build. Nothing was erased or migrated. Set developmentMode to .eraseOnFingerprintChange "
                + "only in debug builds (#if DEBUG), or restore the migration's text as it was applied."
        case let .eraseNotSupported(store, change):
            return "Development mode would erase \(store) because \(change), but the store cannot "
                + "be erased. Nothing was erased or migrated. Restore the migration's text as it was "
                + "applied, or recreate the store by hand and launch again."
        case let .eraseFailed(store, change, reason):
            return "Development mode could not erase \(store), erased because \(change): "
                + "\(reason.quotableInSentence). Nothing was migrated; the store is as it was or empty. "
                + "Close what else holds the store, then launch again."
        }
    }

    public var errorDescription: String? { description }
}
