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
        }
    }

    public var errorDescription: String? { description }
}
