/// What a manager does when its store's level is past the app version, because a newer version
/// of the app wrote it (the user downgraded, or restored an old app over new data).
///
/// ```swift
/// thumbnails.newerStorePolicy = .reset   // a cache can be rebuilt
/// ```
public enum NewerStorePolicy: String, Sendable, Hashable, Codable {
    /// `run()` fails with
    /// ``MigrationError/storeIsNewer(manager:store:level:appVersion:)`` before anything runs (the
    /// default); the plan reports the store as newer without throwing.
    case fail
    /// Leave the store and its level alone; run none of the manager's migrations.
    case ignore
    /// Throw the store's contents away and run every migration again. Only for rebuildable
    /// stores, such as ``CacheStore``.
    case reset
}
