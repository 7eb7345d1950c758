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
    /// `run()` throws ``MigrationError/lateMigrations(manager:store:versions:level:names:)``
    /// before anything runs; the plan lists them.
    case fail
    /// Never runs it; the plan lists it. Migrations that depend on it count it as satisfied.
    case ignore
}

/// What happens to a migration that is not deferred but depends on a deferred one (directly, or
/// by coming after it in its manager's order).
///
/// ```swift
/// coordinator.dependentsOfDeferred = .finishInline   // the launch waits for what they need
/// ```
public enum DependentsOfDeferredPolicy: String, Sendable, Hashable, Codable {
    /// The dependent is deferred too, and runs in the background once what it needs is done (the
    /// default): deferring a migration is a promise to keep it off the launch, and a dependent
    /// registered without thought must not silently pull it back in.
    case wait
    /// The deferred migrations that a migration which is not deferred needs run at launch,
    /// before it: for a dependent the app cannot start without.
    case finishInline
}

/// What a manager does with an applied migration whose fingerprint changed since it ran: its SQL,
/// its file or the fingerprint given for its body was edited afterwards, so the store says
/// applied while the code says something else (see ``MigrationFingerprint``).
///
/// ```swift
/// library.fingerprintPolicy = .fail   // as Flyway: refuse to start until someone decides
/// ```
///
/// Records written before fingerprints existed are never a change. ``MigrationManager/repairFingerprints()``
/// accepts the migrations as they are now.
public enum FingerprintPolicy: String, Sendable, Hashable, Codable {
    /// `run()` throws ``MigrationError/fingerprintsChanged(manager:store:changes:)`` before
    /// anything runs; the plan lists the changes.
    case fail
    /// The plan lists the changes (``MigrationPlan/Manager/changedFingerprints``) and its text
    /// warns; the run goes on (the default: an app at launch had better keep working).
    case warn
    /// Fingerprints are neither compared nor reported.
    case ignore
}
