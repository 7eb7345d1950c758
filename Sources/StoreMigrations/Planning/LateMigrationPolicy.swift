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
