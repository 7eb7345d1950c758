import StoreMigrations

/// The inputs of one differential test case: managers with their migrations and policies, and a
/// sequence of launches against the same stores (records carry over from one to the next).
///
/// Everything is plain data, so that the model reads it without I/O, the shrinker edits it, and
/// a failure prints it.
struct ModelScenario: Sendable, Hashable {
    var managers: [ManagerSpec]
    var launches: [Launch]
    var storeKind: StoreKind

    /// Which store every manager of the scenario lives on (one store per manager).
    enum StoreKind: String, Sendable, Hashable, CaseIterable {
        case inMemory, preferences, userDefaults, sqlite
    }
}

/// A manager `m<index>`: its migrations (all launches draw from them) and its policies.
struct ManagerSpec: Sendable, Hashable {
    var migrations: [MigrationSpec]
    var firstLaunch: FirstLaunchDecision = .runAll
    var newerStore: NewerStorePolicy = .fail
    var late: LateMigrationPolicy = .run
    var fingerprint: FingerprintPolicy = .warn
    var hasHook = false
    /// A squashed migration replacing a range of ``migrations`` (issue 29).
    var squash: SquashSpec?
}

/// A squashed migration: it replaces the manager's migrations `from` through `through`, all
/// registered from the first launch, none post-deploy or deferred. Its body has the effects of
/// the migrations it replaces.
struct SquashSpec: Sendable, Hashable {
    var from: Version
    var through: Version
    /// The first launch whose build registers the squash without the migrations it replaces.
    var originalsRemovedAt: Int?

    var range: ClosedRange<Version> { from...through }
}

/// A migration of another manager, by index.
struct Dependency: Sendable, Hashable {
    var manager: Int
    var version: Version
}

/// One migration as the generator made it.
struct MigrationSpec: Sendable, Hashable {
    enum Body: Sendable, Hashable {
        case plain
        /// Processes `units` units, `batch` a batch; the cursor is the number of units done.
        case resumable(units: Int, batch: Int, deferred: Bool)
    }

    var version: Version
    var body: Body = .plain
    var postDeploy = false
    /// Whether the registration gives a fingerprint (`m0@1.1#1`, or `#2` in launches that edit it).
    var fingerprinted = false
    var dependsOn: [Dependency] = []
    /// The first launch that registers it: a migration added by a later build below versions
    /// already applied is late.
    var introducedAt = 0
    /// Set on the migration a squash registered without its originals stands in as, at its last
    /// version: it runs the squash and records that version alone.
    var standsInFor: SquashSpec?

    var isResumable: Bool {
        if case .resumable = body { return true }
        return false
    }

    var isDeferred: Bool {
        if case .resumable(_, _, let deferred) = body { return deferred }
        return false
    }
}

/// A migration of the scenario: manager index and version.
struct MigrationKey: Sendable, Hashable, Comparable, CustomStringConvertible {
    var manager: Int
    var version: Version

    static func < (lhs: MigrationKey, rhs: MigrationKey) -> Bool {
        (lhs.manager, lhs.version.description) < (rhs.manager, rhs.version.description)
    }

    var description: String { "m\(manager)@\(version)" }
}

/// One launch of the app (or one background run of the deferred work).
struct Launch: Sendable, Hashable {
    enum Kind: Sendable, Hashable {
        /// `run(launchBudget:postDeploy:)`; a zero budget stops every resumable step after one batch.
        case launch(zeroBudget: Bool)
        /// `runDeferred()`: everything pending, deferred migrations included, to the end.
        case background
    }

    var appVersion: Version
    var kind: Kind = .launch(zeroBudget: false)
    var postDeploy = false
    /// Registers the migrations past the app version too (they are ahead).
    var registersAhead = false
    /// Fingerprinted migrations registered with their edited fingerprint in this launch.
    var edited: Set<MigrationKey> = []
    /// Plain bodies that throw; resumable bodies that throw on the batch starting at or after
    /// the given unit.
    var failures: [MigrationKey: Int] = [:]
    /// Resumable bodies that, from the given unit on, return `.more` with the cursor they were given.
    var stuck: [MigrationKey: Int] = [:]
    /// Managers whose app-version hook throws.
    var failingHooks: Set<Int> = []
    /// `manager.baseline(at:)` calls made before planning.
    var baselineCalls: [Int: Version] = [:]
    var dependentsOfDeferred: DependentsOfDeferredPolicy = .wait
    /// Another app version's launch, run to its end on the same stores once this one has planned
    /// (from its `.planned` event), before this one runs any step.
    var interleaved: [Launch] = []

    var runsPostDeploy: Bool { kind == .background ? false : postDeploy }

    /// The migrations of `managers` this launch (the `index`th) registers, by manager: a squash
    /// registered without its originals leaves them out.
    func registrations(of managers: [ManagerSpec], index: Int) -> [[MigrationSpec]] {
        managers.map { manager in
            let removed = squash(of: manager, index: index).flatMap { $0.originalsRemoved ? $0.spec.range : nil }
            return manager.migrations.filter { migration in
                migration.introducedAt <= index && (registersAhead || migration.version.base <= appVersion)
                    && !(removed?.contains(migration.version) ?? false)
            }.sorted { $0.version < $1.version }
        }
    }

    /// `manager`'s squash, when this launch registers it (with its last version), and whether
    /// without the migrations it replaces.
    func squash(of manager: ManagerSpec, index: Int) -> (spec: SquashSpec, originalsRemoved: Bool)? {
        guard let squash = manager.squash, registersAhead || squash.through.base <= appVersion else { return nil }
        // A build drops the originals only once its app version reaches the squash.
        return (squash, squash.through.base <= appVersion && squash.originalsRemovedAt.map { index >= $0 } ?? false)
    }

    /// The fingerprint text `migration` of manager `manager` is registered with, if any.
    func fingerprint(of migration: MigrationSpec, manager: Int) -> String? {
        guard migration.fingerprinted else { return nil }
        let key = MigrationKey(manager: manager, version: migration.version)
        return "\(key)#\(edited.contains(key) ? 2 : 1)"
    }
}

extension ModelScenario: CustomStringConvertible {
    /// The scenario as a reader wants it after a divergence.
    var description: String {
        var lines = ["store: \(storeKind.rawValue)"]
        for (index, manager) in managers.enumerated() {
            var policies = ["firstLaunch \(manager.firstLaunch)", "newerStore \(manager.newerStore.rawValue)",
                            "late \(manager.late.rawValue)", "fingerprint \(manager.fingerprint.rawValue)"]
            if manager.hasHook { policies.append("hook") }
            if let squash = manager.squash {
                policies.append("squash \(squash.from)...\(squash.through)"
                    + (squash.originalsRemovedAt.map { ", originals removed from launch \($0)" } ?? ""))
            }
            lines.append("m\(index): " + policies.joined(separator: ", "))
            for migration in manager.migrations {
                var text = "  \(migration.version)"
                if case let .resumable(units, batch, deferred) = migration.body {
                    text += " resumable(\(units) units, batches of \(batch)\(deferred ? ", deferred" : ""))"
                }
                if migration.postDeploy { text += " post-deploy" }
                if migration.fingerprinted { text += " fingerprinted" }
                if !migration.dependsOn.isEmpty {
                    text += " dependsOn " + migration.dependsOn.map { "m\($0.manager)@\($0.version)" }.joined(separator: ", ")
                }
                if migration.introducedAt > 0 { text += " from launch \(migration.introducedAt)" }
                lines.append(text)
            }
        }
        for (index, launch) in launches.enumerated() {
            lines.append("launch \(index): " + launch.summary)
            for inner in launch.interleaved { lines.append("  interleaved at the lock: " + inner.summary) }
        }
        return lines.joined(separator: "\n")
    }
}

extension Launch {
    var summary: String {
        var parts = ["app \(appVersion)"]
        switch kind {
        case .launch(let zeroBudget): if zeroBudget { parts.append("launch budget 0") }
        case .background: parts.append("runDeferred")
        }
        if postDeploy { parts.append("postDeploy") }
        if registersAhead { parts.append("registers ahead") }
        if !edited.isEmpty { parts.append("edited " + edited.sorted().map(\.description).joined(separator: ", ")) }
        if !failures.isEmpty {
            parts.append("failing " + failures.sorted { $0.key < $1.key }.map { "\($0.key) (from unit \($0.value))" }.joined(separator: ", "))
        }
        if !stuck.isEmpty {
            parts.append("stuck " + stuck.sorted { $0.key < $1.key }.map { "\($0.key) (from unit \($0.value))" }.joined(separator: ", "))
        }
        if !failingHooks.isEmpty { parts.append("failing hooks " + failingHooks.sorted().map { "m\($0)" }.joined(separator: ", ")) }
        if !baselineCalls.isEmpty {
            parts.append("baseline(at:) " + baselineCalls.sorted { $0.key < $1.key }.map { "m\($0.key) \($0.value)" }.joined(separator: ", "))
        }
        if dependentsOfDeferred != .wait { parts.append("dependentsOfDeferred \(dependentsOfDeferred.rawValue)") }
        return parts.joined(separator: ", ")
    }
}
