import Foundation

/// The errors the coordinator throws for bad registrations, invalid graphs and stores it cannot
/// migrate. Each message names the manager, the migration and the store involved, and what to do.
///
/// ```swift
/// do {
///     let plan = try coordinator.plan()
/// } catch let error as MigrationError {
///     print(error) // e.g. "Migrations form a cycle: a@1.1 → b@2 → a@1.1. …"
/// }
/// ```
public enum MigrationError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// Two managers were given the same name.
    case duplicateManager(name: String)
    /// One manager registered the same version twice: `version` first, then
    /// `alsoRegisteredAs`, which may be spelled differently (`1.0` and `1.0.0`, or `1.00`, are
    /// the same version).
    case duplicateMigration(manager: String, version: Version, alsoRegisteredAs: Version)
    /// A dependency names a manager the coordinator does not have.
    case unknownManager(dependency: MigrationReference, of: MigrationReference)
    /// A dependency names a version its manager never registered.
    case unknownMigration(dependency: MigrationReference, of: MigrationReference)
    /// A migration that can run at this app version depends on one that cannot.
    case dependencyAhead(dependency: MigrationReference, of: MigrationReference, appVersion: Version)
    /// Dependencies form a cycle; the steps are listed in run order, starting and ending with the
    /// smallest (by manager name, then version). The message asks to remove only declared
    /// dependencies: a step that follows the previous version of its manager always will.
    case cycle([MigrationReference])
    /// The app version carries a sub-migration number.
    case invalidAppVersion(Version)
    /// A string literal given as a version is not one (see ``Version/isValid``): the app version
    /// when `manager` is `nil`, else a version registered, depended on or given as a baseline for
    /// that manager's migrations.
    case invalidVersion(text: String, reason: String, manager: String?)
    /// A store's level for a manager is past the app version: a newer app wrote it.
    case storeIsNewer(manager: String, store: String, level: Version, appVersion: Version)
    /// The ``NewerStorePolicy/reset`` policy was chosen for a store that is not rebuildable.
    case resetNotSupported(manager: String, store: String)
    /// The ``NewerStorePolicy/reset`` policy was chosen for a manager whose store also holds
    /// other managers: throwing the store away would leave their levels describing lost data.
    case resetOfSharedStore(manager: String, store: String, otherManagers: [String])
    /// A store's levels could not be read.
    case unreadableState(manager: String, store: String, reason: String)
    /// A first-launch `decide` closure threw.
    case firstLaunchDecisionFailed(manager: String, store: String, reason: String)
    /// A first-launch decision adopted a store (``FirstLaunchDecision/adopt(at:)``) at a
    /// version past the app version.
    case adoptedPastAppVersion(manager: String, store: String, version: Version, appVersion: Version)
    /// Migrations registered below the manager's level were never applied, and its
    /// ``LateMigrationPolicy`` is ``LateMigrationPolicy/fail``; `names` holds the names of those
    /// that have one.
    case lateMigrations(manager: String, store: String, versions: [Version], level: Version, names: [Version: String] = [:])
    /// Applied migrations were edited since they ran, or resumable ones since their first batches
    /// committed (their fingerprints changed), and the manager's ``FingerprintPolicy`` is
    /// ``FingerprintPolicy/fail``.
    case fingerprintsChanged(manager: String, store: String, changes: [FingerprintChange])
    /// A run without its post-deploy steps would hold back `migrations`, ordinary migrations of
    /// the manager that wait for the pending post-deploy migrations `postDeploy` (the next release
    /// deployed before the previous one's post-deploy step ran). The run refuses rather than
    /// start the release's code on a store its migrations have not reached.
    case heldBehindPostDeploy(manager: String, store: String, migrations: [Version], postDeploy: [MigrationReference])
    /// A batch of a resumable migration returned ``BatchResult/more(cursor:processed:total:)``
    /// with the cursor it was given: the next batch would repeat it for ever. The batch was
    /// rolled back.
    case batchDidNotAdvance(migration: MigrationReference, store: String, cursor: String)
    /// A migration registered with ``TransactionMode/none`` belongs to a store that runs every
    /// step in a transaction.
    case transactionModeNotSupported(migration: MigrationReference, store: String)
    /// A target of a targeted plan or run names a migration no manager registers.
    case unknownTarget(MigrationReference)
    /// A target of a targeted plan or run is ahead of the app version, so it never runs.
    case targetAhead(MigrationReference, appVersion: Version)
    /// A squashed migration's range starts after it ends.
    case squashRangeEmpty(manager: String, store: String, from: Version, through: Version)
    /// A squashed migration's range covers registered migrations, but `bound`, one of its ends,
    /// is not one of them: the range must name the first and last migration it replaces.
    case squashBoundNotRegistered(manager: String, store: String, squash: Version, bound: Version)
    /// Two squashed migrations of one manager replace overlapping ranges.
    case squashesOverlap(manager: String, store: String, squash: Version, other: Version)
    /// A squashed migration was registered post-deploy: it replaces a whole range on a fresh
    /// store, where nothing waits for a deployment.
    case squashIsPostDeploy(manager: String, store: String, squash: Version)
    /// The store has part of a squashed migration's range applied (`applied`) or in progress,
    /// which only the replaced migrations can finish: they are no longer registered
    /// (`originalsRegistered` false), or another process ran some of them after this run planned.
    /// Nothing ran.
    case squashedRangePartWay(manager: String, store: String, squash: Version, applied: [Version], originalsRegistered: Bool)

    public var description: String {
        switch self {
        case let .duplicateManager(name):
            return "A manager named \"\(name)\" already exists. Give each manager a unique name: "
                + "levels are recorded under it."
        case let .duplicateMigration(manager, version, other):
            let spellings = version.description == other.description ? "" : ", also as \(other): versions "
                + "compare as numbers, component by component, missing components counting as zero "
                + "(1.0 = 1.0.0 = 1.00)"
            return "Manager \"\(manager)\" registers migration \(version) twice\(spellings). Merge the "
                + "two bodies or give one another version."
        case let .unknownManager(dependency, dependent):
            return "Migration \(dependent) depends on \(dependency), but there is no manager named "
                + "\"\(dependency.manager)\". Create that manager before planning, or fix the name."
        case let .unknownMigration(dependency, dependent):
            return "Migration \(dependent) depends on \(dependency), but manager "
                + "\"\(dependency.manager)\" registers no migration \(dependency.version). Register "
                + "it, or depend on a version that exists."
        case let .dependencyAhead(dependency, dependent, appVersion):
            return "Migration \(dependent) depends on \(dependency), which is ahead of app version "
                + "\(appVersion) and so never runs in this version. Depend on a migration at or "
                + "below \(appVersion), or move \(dependent) past it."
        case let .cycle(steps):
            // An edge up a manager's own versions is its version order, which no declaration can
            // undo (even one declared as well is implied by that order): only the others can go.
            let edges = zip(steps, steps.dropFirst())
            let isVersionOrder = { (from: MigrationReference, to: MigrationReference) in
                from.manager == to.manager && from.version < to.version
            }
            let fixed = edges.filter(isVersionOrder).map { "\($0) → \($1)" }
            let removable = edges.filter { !isVersionOrder($0, $1) }.map { dependency, dependent in
                dependency == dependent ? "\(dependent) on itself" : "\(dependent) on \(dependency)"
            }
            var text = "Migrations form a cycle: \(steps.map(\.description).joined(separator: " → "))"
            if !fixed.isEmpty {
                text += " (\(fixed.joined(separator: " and ")) \(fixed.count == 1 ? "is" : "are") version order)"
            }
            return text + (removable.count == 1
                ? ". Remove the dependency of \(removable[0])."
                : ". Remove one of these dependencies: \(removable.joined(separator: ", ")).")
        case let .invalidAppVersion(version):
            return "App version \(version) carries a sub-migration number; an app version is "
                + "plain, such as \(version.base). Sub-migrations belong to migrations only."
        case let .invalidVersion(text, reason, manager):
            return (manager.map { "Version \(text.debugDescription) of manager \"\($0)\"" } ?? "App version \(text.debugDescription)")
                + " is not a version: \(reason). Nothing was migrated. Correct the literal to dot-separated "
                + "non-negative integers with an optional sub-migration number, such as \"2\", \"1.2.5\" or \"1.1-2\"."
        case let .storeIsNewer(manager, store, level, appVersion):
            return "Manager \"\(manager)\" on \(store) is at level \(level), past app version "
                + "\(appVersion): a newer version of the app wrote it. Nothing was migrated. Update "
                + "the app, or set the manager's newerStorePolicy to .ignore (or .reset for a "
                + "rebuildable store)."
        case let .resetNotSupported(manager, store):
            return "Manager \"\(manager)\" uses the .reset newer-store policy, but \(store) is not "
                + "rebuildable: resetting it would lose data. Use .fail or .ignore."
        case let .resetOfSharedStore(manager, store, others):
            return "Manager \"\(manager)\" uses the .reset newer-store policy, but \(store) also holds "
                + "managers \(others.map { "\"\($0)\"" }.joined(separator: ", ")): a reset would throw their data away "
                + "while their levels stay. Give the manager a store of its own, or use .fail or .ignore."
        case let .unreadableState(manager, store, reason):
            // A store's error that names the store already needs no second mention of it.
            let opening = "The level of manager \"\(manager)\" cannot be read" + (reason.contains(store) ? "" : " from \(store)")
            // A store's own typed error already says what happened, that nothing was migrated,
            // and what to do about it; repeating those, or advising "access" for a damaged
            // file, would only blur its message.
            if reason.contains("Nothing was migrated") || reason.contains("Nothing was changed") {
                return opening + ". " + reason
            }
            return opening + ": " + reason.quotableInSentence
                + ". Nothing was migrated; the store was left as it is. Fix access to the store and "
                + "launch again (an unreadable level is never taken for a first launch)."
        case let .firstLaunchDecisionFailed(manager, store, reason):
            let opening = "The first-launch decision of manager \"\(manager)\" on \(store) threw"
            if reason.contains("Nothing was migrated") { return opening + ". " + reason }
            return opening + ": " + reason.quotableInSentence
                + ". Nothing was migrated. Fix the decision closure, or choose .runAll or .baseline."
        case let .adoptedPastAppVersion(manager, store, version, appVersion):
            return "The first-launch decision of manager \"\(manager)\" on \(store) adopts the store at \(version), "
                + "past the app version \(appVersion). Nothing was migrated. Adopt it at the version of the release "
                + "that wrote its data."
        case let .lateMigrations(manager, store, versions, level, names):
            let list = versions.map { "\(manager)@\($0)".titled(names[$0]) }.joined(separator: ", ")
            return "Manager \"\(manager)\" on \(store) is at level \(level), but \(list) "
                + "\(versions.count == 1 ? "was" : "were") registered below it and never applied (a "
                + "branch merged late). Nothing was migrated. Set the manager's lateMigrationPolicy "
                + "to .run to run \(versions.count == 1 ? "it" : "them") now, or .ignore to leave "
                + "\(versions.count == 1 ? "it" : "them") unapplied."
        case let .fingerprintsChanged(manager, store, changes):
            let list = changes.map(\.description).joined(separator: "; ")
            let one = changes.count == 1
            let edited = changes.contains(where: \.isInProgress)
                ? (one ? "a resumable migration part-way edited since its first batches" : "migrations edited since they ran or started")
                : "\(one ? "an applied migration" : "applied migrations") edited since \(one ? "it" : "they") ran"
            return "Manager \"\(manager)\" on \(store) has \(edited): \(list). Nothing was migrated. Restore "
                + "\(one ? "its" : "their") text as it was applied, or accept the edit with repairFingerprints() on manager "
                + "\"\(manager)\"."
        case let .heldBehindPostDeploy(manager, store, migrations, postDeploy):
            let held = migrations.map { "\(manager)@\($0)" }.joined(separator: ", ")
            let waitedFor = postDeploy.map(\.description).joined(separator: ", ")
            return "Migration\(migrations.count == 1 ? "" : "s") \(held) of manager \"\(manager)\" on \(store) wait\(migrations.count == 1 ? "s" : "") "
                + "for post-deploy migration\(postDeploy.count == 1 ? "" : "s") \(waitedFor), which \(postDeploy.count == 1 ? "has" : "have") "
                + "not run: this release would start on a store its migrations have not reached. Nothing was migrated. "
                + "Run the previous release's post-deploy migrations first (the command's migrate --post-deploy, or "
                + "run(postDeploy: true)), once none of its earlier replicas serves."
        case let .batchDidNotAdvance(migration, store, cursor):
            return "A batch of resumable migration \(migration) on \(store) returned .more with the cursor it was given "
                + "(\(cursor.debugDescription)), so the next batch would repeat it for ever. That batch was rolled back; "
                + "the batches before it stay. Return the cursor after the last unit the batch processed, or .finished "
                + "when none is left."
        case let .transactionModeNotSupported(migration, store):
            return "Migration \(migration) is registered with transaction: .none, but \(store) runs "
                + "every step in a transaction. Nothing of it ran. Register it without the option."
        case let .unknownTarget(target):
            return "Target \(target) names no registered migration. Nothing was migrated. Register "
                + "it, or target a migration that exists."
        case let .targetAhead(target, appVersion):
            return "Target \(target) is ahead of app version \(appVersion) and never runs in this "
                + "version. Nothing was migrated. Target a migration at or below \(appVersion)."
        case let .squashRangeEmpty(manager, store, from, through):
            return "Squashed migration \(manager)@\(through) on \(store) replaces the range from \(from) through "
                + "\(through), which starts after it ends. Nothing was migrated. Give the first replaced version as "
                + "from: and the last as through:."
        case let .squashBoundNotRegistered(manager, store, squash, bound):
            return "Squashed migration \(manager)@\(squash) on \(store) names \(bound) as an end of its range, but "
                + "manager \"\(manager)\" registers no migration \(bound) while it registers others in the range. "
                + "Nothing was migrated. Make the range start and end at the first and last migration it replaces."
        case let .squashesOverlap(manager, store, squash, other):
            return "Squashed migrations \(manager)@\(other) and \(manager)@\(squash) on \(store) replace overlapping "
                + "ranges. Nothing was migrated. Merge them into one squash, or make their ranges disjoint."
        case let .squashIsPostDeploy(manager, store, squash):
            return "Squashed migration \(manager)@\(squash) on \(store) is registered post-deploy, but a squash runs "
                + "only on a store with none of its range applied, where nothing waits for a deployment. Nothing was "
                + "migrated. Register it without the post-deploy option."
        case let .squashedRangePartWay(manager, store, squash, applied, originalsRegistered):
            let list = applied.isEmpty ? "part of it in progress" : applied.map { "\($0)" }.joined(separator: ", ") + " applied"
            let action = originalsRegistered
                ? "Launch again: the next run plans the replaced migrations for this store."
                : "Run the previous release, which still registers the replaced migrations, on this store first; "
                    + "then this release."
            return "Manager \"\(manager)\" on \(store) is part-way through the range squashed migration "
                + "\(manager)@\(squash) replaces (\(list)), which only the replaced migrations can finish. Nothing "
                + "was migrated. " + action
        }
    }

    public var errorDescription: String? { description }
}
