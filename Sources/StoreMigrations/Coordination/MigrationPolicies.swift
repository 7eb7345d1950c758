/// What a manager does when its store has no level recorded yet.
///
/// ```swift
/// prefs.firstLaunchPolicy = .baseline   // a fresh install has nothing to migrate
/// library.firstLaunchPolicy = .decide { store in
///     try store.read { db in try db.tableExists("notes") } ? .runAll : .baseline
/// }
/// ```
public enum FirstLaunchPolicy<Store: MigrationStore>: Sendable {
    /// Runs every migration up to the app version (the default, like MTMigration and GRDB).
    case runAll
    /// Records the app version (or the highest migration at or below it, when a sub-migration is
    /// registered) as the level and runs nothing, like MFMigrationManager and Flyway's baseline.
    case baseline
    /// Chooses from the store's contents: legacy data present → ``FirstLaunchDecision/runAll``,
    /// empty → ``FirstLaunchDecision/baseline``. Called while planning; it must only read.
    case decide(@Sendable (Store) throws -> FirstLaunchDecision)
}

/// The choice a ``FirstLaunchPolicy/decide(_:)`` closure makes.
public enum FirstLaunchDecision: String, Sendable, Hashable, Codable {
    /// Run every migration up to the app version.
    case runAll
    /// Record the app version as the level and run nothing.
    case baseline
}

/// What a manager does when its store's level is past the app version, because a newer version
/// of the app wrote it (the user downgraded, or restored an old app over new data).
///
/// ```swift
/// thumbnails.newerStorePolicy = .reset   // a cache can be rebuilt
/// ```
public enum NewerStorePolicy: String, Sendable, Hashable, Codable {
    /// ``MigrationCoordinator/run()`` fails with
    /// ``MigrationError/storeIsNewer(manager:store:level:appVersion:)`` before anything runs (the
    /// default); the plan reports the store as newer without throwing.
    case fail
    /// Leave the store and its level alone; run none of the manager's migrations.
    case ignore
    /// Throw the store's contents away and run every migration again. Only for rebuildable
    /// stores, such as ``CacheStore``.
    case reset
}

/// What a manager does with a *late* migration: one registered at or below the manager's level
/// that was never applied, because a branch was merged after a higher version shipped (`1.1.1`
/// registered after `1.2` was applied).
///
/// ```swift
/// library.lateMigrationPolicy = .fail   // as Flyway: refuse to start until someone decides
/// ```
public enum LateMigrationPolicy: String, Sendable, Hashable, Codable {
    /// Runs it, in version order among the pending migrations, dependencies respected (the
    /// default, as GRDB and Django).
    case run
    /// ``MigrationCoordinator/run()`` throws ``MigrationError/lateMigrations(manager:store:versions:level:)``
    /// before anything runs; the plan lists them.
    case fail
    /// Never runs it; the plan lists it. Migrations that depend on it count it as satisfied.
    case ignore
}

/// What the scheduler does with the rest of the work when a migration fails.
public enum FailurePolicy: String, Sendable, Hashable, Codable {
    /// Skip the failed step's transitive dependents and let independent work finish (the default).
    case continueIndependentWork
    /// Start nothing new after the first failure; steps already running finish.
    case stopOnFirstFailure
}
