/// Marks a migration to run only once the deployment says no process of the previous app version
/// is serving any more: a contract step, such as dropping a column the previous version still
/// reads, that would break its replicas in the middle of a rolling deploy (GitLab's post-deploy
/// migrations).
///
/// ```swift
/// orders.register("2.0") { db in try db.execute("ALTER TABLE orders ADD COLUMN reference text") }
/// orders.register("2.0-1", options: .postDeploy) { db in
///     try db.execute("ALTER TABLE orders DROP COLUMN legacy_ref")
/// }
///
/// try coordinator.run()                   // every replica's start-up: 2.0 only
/// try coordinator.run(postDeploy: true)   // once the old replicas are gone: 2.0-1
/// ```
///
/// Start-up runs leave it, and every migration that depends on it (its manager's later ones
/// included), pending; plans list them apart (``MigrationPlan/postDeploySteps``,
/// ``MigrationPlan/Manager/postDeploy``). A run with `postDeploy: true` (or
/// `migrate --post-deploy` in an app's migration command) runs them with everything else pending.
///
/// It combines with the other options, in either order:
///
/// ```swift
/// orders.register("2.0-1", options: .named("drop legacy_ref").postDeploy) { db in … }
/// orders.register("2.0-2", options: .postDeploy.named("drop old index")) { db in … }
/// ```
public enum PostDeployMigration: MigrationOption {
    /// Whether the migration is post-deploy.
    public typealias Value = Bool
}

extension MigrationOptions {
    /// The migration runs only once the deployment says the previous version is gone
    /// (``PostDeployMigration``).
    public static var postDeploy: MigrationOptions { MigrationOptions(PostDeployMigration.self, true) }
    /// These options, marking a post-deploy migration too: `.named("drop legacy_ref").postDeploy`.
    public var postDeploy: MigrationOptions { setting(PostDeployMigration.self, true) }
}
