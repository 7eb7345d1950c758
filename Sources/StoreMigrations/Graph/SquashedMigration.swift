/// A squashed migration as the graph and the planner see it: pure data, no body. It replaces
/// its manager's migrations from `from` through `through`; its version is `through`.
///
/// While the replaced migrations are registered, `recorded` holds their positions among the
/// manager's versions: a store with none of them applied takes the squash, which records each
/// of them with its own name and fingerprint. Once they are removed, the squash stands in for
/// them as a migration of its own at `through` (`recorded` is its one position), and a store
/// still part-way through the range can no longer be migrated by this release.
struct SquashedMigration: Sendable {
    let from: Version
    let through: Version
    /// Positions among the manager's versions of the migrations a squashed run records applied.
    let recorded: Range<Int>
    let originalsRemoved: Bool
    let isPostDeploy: Bool
    let name: String?
    /// The error a plan throws before anything runs, decided when the manager was frozen: a squash
    /// of the whole history that cannot replace it (``MigrationManager/squashHistory(options:_:)``).
    var refusal: (any Error)?

    /// The range replaced.
    var range: ClosedRange<Version> { from...through }

    /// Rejects squashes a plan cannot honour: a range that starts after it ends, two that overlap,
    /// ends that are not registered versions while the originals are, a post-deploy squash.
    /// `squashes` are sorted by `from`.
    static func validate(_ squashes: [SquashedMigration], versions: [Version], manager: String, store: String) throws {
        var previous: SquashedMigration?
        for squash in squashes {
            if let refusal = squash.refusal { throw refusal }
            for bound in [squash.from, squash.through] {
                if let error = bound.parseError {
                    throw MigrationError.invalidVersion(text: error.text, reason: error.reason, manager: manager)
                }
            }
            guard squash.from <= squash.through else {
                throw MigrationError.squashRangeEmpty(manager: manager, store: store, from: squash.from, through: squash.through)
            }
            if let previous, squash.from <= previous.through {
                throw MigrationError.squashesOverlap(manager: manager, store: store, squash: squash.through, other: previous.through)
            }
            if !squash.originalsRemoved {
                for (bound, position) in [(squash.from, squash.recorded.lowerBound), (squash.through, squash.recorded.upperBound - 1)]
                where versions[position] != bound {
                    throw MigrationError.squashBoundNotRegistered(manager: manager, store: store, squash: squash.through, bound: bound)
                }
            }
            if squash.isPostDeploy {
                throw MigrationError.squashIsPostDeploy(manager: manager, store: store, squash: squash.through)
            }
            previous = squash
        }
    }
}
