/// A manager's whole history as a squash of it sees it when the manager is frozen for a plan or
/// run (``MigrationManager/squashHistory(options:_:)``): its registered migrations in version
/// order, with what a store product checks before it replaces them.
package struct SquashedHistory: Sendable {
    /// The manager's name and its store's description, for the errors that name them.
    package let manager: String
    package let store: String
    /// The registered versions, ascending; never empty.
    package let versions: [Version]
    /// By position, each migration's options (its name, fingerprint and store options).
    package let options: [MigrationOptions]
    /// By position, whether the migration is resumable.
    package let resumable: [Bool]

    /// By position, whether the migration waits for the deployment (``PostDeployMigration``).
    package func isPostDeploy(_ position: Int) -> Bool { options[position].isPostDeploy }
}
