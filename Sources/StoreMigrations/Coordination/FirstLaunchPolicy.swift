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
    /// Chooses from the store's contents: legacy data present → ``FirstLaunchDecision/runAll``
    /// (or ``FirstLaunchDecision/adopt(at:)`` the release that wrote it), empty →
    /// ``FirstLaunchDecision/baseline``. Called while planning; it must only read.
    case decide(@Sendable (Store) throws -> FirstLaunchDecision)
}
