/// One unit of work on one manager's store, as the planner decides it and the step executor
/// carries it out: each kind with the data it needs and nothing optional. The public
/// ``PlannedStep`` is made from the plan at the boundary, for people and their tools; the rules
/// every kind obeys under the store's lock are a table over ``Kind`` (``StepRules``).
enum Step: Sendable, Hashable {
    /// Runs a registered body once.
    case migrate(Migration)
    /// Runs the batches of a resumable migration, each in a transaction of its own, from the
    /// recorded cursor until the last one records it applied.
    case batches(Migration)
    /// Records a baseline mark without running anything (first launch, ``FirstLaunchPolicy/baseline``).
    case baseline(Version)
    /// Throws away a rebuildable store's content written past the app version.
    case reset(newerThan: Version)
    /// Runs the manager's app-version hooks and records the app version.
    case appVersionChange(to: Version)
    /// Runs a squashed migration once on a store with none of its range applied, and records
    /// every migration of the range it replaces as applied, in the same transaction.
    case squash(Squash)

    /// A registered migration: its version, and its position among its manager's versions
    /// (where its body, options and label are).
    struct Migration: Sendable, Hashable {
        let position: Int
        let version: Version
    }

    /// A squashed migration (``MigrationManager/squash(from:through:dependsOn:options:_:)-(_,_,_,_,Body)``):
    /// which of its manager's squashes it is, the range it replaces (its version is the upper
    /// bound), and the positions of the versions it records: the replaced migrations, or its own
    /// stand-in once they are removed.
    struct Squash: Sendable, Hashable {
        let index: Int
        let range: ClosedRange<Version>
        let recorded: Range<Int>

        var version: Version { range.upperBound }
    }

    /// The kinds of step, as the rules table lists them.
    enum Kind: Sendable, Hashable, CaseIterable {
        case migrate, batches, baseline, reset, appVersionChange, squash
    }

    var kind: Kind {
        switch self {
        case .migrate: return .migrate
        case .batches: return .batches
        case .baseline: return .baseline
        case .reset: return .reset
        case .appVersionChange: return .appVersionChange
        case .squash: return .squash
        }
    }

    /// The registered migration the step runs, for the two kinds that run one.
    var migration: Migration? {
        switch self {
        case .migrate(let migration), .batches(let migration): return migration
        case .baseline, .reset, .appVersionChange, .squash: return nil
        }
    }

    /// The positions among its manager's versions of the migrations the step records applied,
    /// for the kinds that record registered migrations.
    var recordedPositions: Range<Int>? {
        switch self {
        case .migrate(let migration), .batches(let migration): return migration.position..<migration.position + 1
        case .squash(let squash): return squash.recorded
        case .baseline, .reset, .appVersionChange: return nil
        }
    }
}
