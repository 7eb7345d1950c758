/// The pending work of a coordinator, computed by ``MigrationCoordinator/plan(targets:postDeploy:)`` without
/// running anything.
///
/// ```swift
/// let plan = try coordinator.plan()
/// if plan.isUpToDate { return }
/// print(plan)                 // per manager: level, pending and ahead versions; then the steps
/// for wave in plan.waves { … } // steps that could run together
/// try plan.graphviz().write(to: dotURL, atomically: true, encoding: .utf8)
/// ```
///
/// Steps are in one deterministic topological order: by wave, then by manager registration
/// order (a manager has at most one step per wave).
public struct MigrationPlan: Sendable, Hashable, Codable, CustomStringConvertible {
    /// One manager's part of the plan.
    public struct Manager: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The manager's name.
        public let name: String
        /// The store it migrates.
        public let store: String
        /// Whether the store does not exist yet (a file or folder that is not there), so that its
        /// first step creates it, folders included, and runs on an empty store. Expected at a
        /// first install; for an app that has run before, the store's path is probably wrong
        /// (a mistyped app-group folder, say).
        public let createsStore: Bool
        /// The level recorded in the store, or `nil` on a first launch.
        public let level: Version?
        /// On a first launch, what the first-launch policy decided.
        public let firstLaunch: FirstLaunchDecision?
        /// When the store's level is past the app version (a newer app wrote it), the policy
        /// applied to it; `nil` when it is not. With ``NewerStorePolicy/fail``, `run()`
        /// refuses to start.
        public let newerStore: NewerStorePolicy?
        /// The migrations that will run, in order.
        public let pending: [Version]
        /// Migrations below the level that were never applied (registered late); they are in
        /// ``pending`` when ``latePolicy`` is ``LateMigrationPolicy/run``.
        public let late: [Version]
        /// The names of the migrations in ``late`` that have one, by version.
        public let lateNames: [Version: String]
        /// What happens to ``late``.
        public let latePolicy: LateMigrationPolicy
        /// The registered migrations past the app version, which never run in this version.
        public let ahead: [Version]
        /// The pending migrations a launch leaves for the background: deferred ones, and those
        /// that wait for them (``DependentsOfDeferredPolicy``).
        public internal(set) var deferred: [Version] = []
        /// The pending migrations that wait for the deployment to say the previous version is
        /// gone: those registered post-deploy (``/StoreMigrations/MigrationOptions/postDeploy-type.property``) and
        /// those that depend on them. In ``pending`` only when the plan includes them
        /// (`plan(postDeploy: true)`).
        public internal(set) var postDeploy: [Version] = []
        /// The ordinary migrations among ``postDeploy``: registered without the option, held only
        /// because they wait for a post-deploy one. A run without the post-deploy steps refuses
        /// to start while there are any (``MigrationError/heldBehindPostDeploy(manager:store:migrations:postDeploy:)``);
        /// always empty in a plan that includes the post-deploy steps.
        public internal(set) var heldBehindPostDeploy: [Version] = []
        /// The pending resumable migrations that have committed batches: how far each has got,
        /// where it resumes, and the time left at the measured rate.
        public internal(set) var inProgress: [StepProgress]
        /// The applied migrations edited since they ran: their registrations give fingerprints
        /// other than those recorded (empty under ``FingerprintPolicy/ignore``).
        public let changedFingerprints: [FingerprintChange]
        /// What happens to ``changedFingerprints``.
        public let fingerprintPolicy: FingerprintPolicy
        /// When ``/StoreMigrations/DevelopmentMode/eraseOnFingerprintChange`` erases the manager's
        /// store before the run: the edited migrations that make it (of any manager of the store).
        /// Every migration is then pending, replayed from the first; `nil` when the store is not
        /// erased.
        public internal(set) var developmentErase: [FingerprintChange]?

        /// The manager's line of the plan's text: `library (…): level 1.0, pending 1.1, 2.0; ahead 2.1`.
        public var description: String {
            var line = "\(name) (\(store)): level \(level?.description ?? "none")"
            if let firstLaunch { line += ", first launch (\(firstLaunch))" }
            if createsStore { line += ", store does not exist: its first step creates it" }
            if developmentErase != nil { line += ", store erased first (development mode)" }
            if let newerStore { line += ", newer than the app (\(newerStore.rawValue))" }
            line += pending.isEmpty ? ", nothing pending" : ", pending " + pending.map(\.description).joined(separator: ", ")
            if !late.isEmpty {
                line += "; late (\(latePolicy.rawValue)): " + late.map { $0.description.titled(lateNames[$0]) }.joined(separator: ", ")
            }
            if !ahead.isEmpty { line += "; ahead " + ahead.map(\.description).joined(separator: ", ") }
            if !deferred.isEmpty { line += "; deferred " + deferred.map(\.description).joined(separator: ", ") }
            if !postDeploy.isEmpty { line += "; post-deploy " + postDeploy.map(\.description).joined(separator: ", ") }
            return line
        }
    }

    /// Something worth a look that does not stop the run.
    public struct Diagnostic: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The applied migration concerned.
        public let migration: MigrationReference
        /// Its dependency, which is not applied.
        public let dependency: MigrationReference
        /// The dependency's manager's level.
        public let dependencyLevel: Version?

        public var description: String {
            "\(migration) is applied but its dependency \(dependency) is not (\"\(dependency.manager)\" is at "
                + "\(dependencyLevel?.description ?? "no level")): its store may have been restored from an older "
                + "backup or deleted. \(migration) is not run again; check that its data is consistent."
        }
    }

    /// The app version the plan migrates to.
    public let appVersion: Version
    /// Each manager's part, in registration order.
    public internal(set) var managers: [Manager]
    /// Every step, in the order the plan would run them one at a time.
    public let steps: [PlannedStep]
    /// Findings that do not stop the run.
    public let diagnostics: [Diagnostic]
    /// The steps left out of ``steps`` because they wait for the deployment to say the previous
    /// version is gone (post-deploy migrations and their dependents), in the order they would
    /// run; empty when the plan includes them. ``isUpToDate`` does not count them: a replica's
    /// start-up has nothing to do about them.
    public internal(set) var postDeploySteps: [PlannedStep] = []

    /// Whether there is nothing to do: no step, and nothing that `run()`
    /// would refuse to start for (a newer store or late migrations under a `.fail` policy).
    /// Post-deploy work held back (``postDeploySteps``) does not count: a start-up run leaves it.
    public var isUpToDate: Bool { steps.isEmpty && blockingErrors.isEmpty }

    /// Whether some manager's store is newer than the app (a newer app version wrote it).
    public var hasNewerStore: Bool { managers.contains { $0.newerStore != nil } }

    /// Why `run()` would refuse to start, before running anything: stores
    /// newer than the app under ``NewerStorePolicy/fail``, late migrations under
    /// ``LateMigrationPolicy/fail``, edited migrations under ``FingerprintPolicy/fail``, ordinary
    /// migrations held behind a post-deploy one. Empty when the plan can run.
    public var blockingErrors: [MigrationError] {
        managers.compactMap { manager in
            if manager.newerStore == .fail, let level = manager.level {
                return .storeIsNewer(manager: manager.name, store: manager.store, level: level, appVersion: appVersion)
            }
            if manager.latePolicy == .fail, !manager.late.isEmpty, let level = manager.level {
                return .lateMigrations(
                    manager: manager.name, store: manager.store, versions: manager.late, level: level, names: manager.lateNames)
            }
            if manager.fingerprintPolicy == .fail, !manager.changedFingerprints.isEmpty {
                return .fingerprintsChanged(manager: manager.name, store: manager.store, changes: manager.changedFingerprints)
            }
            if !manager.heldBehindPostDeploy.isEmpty {
                return .heldBehindPostDeploy(
                    manager: manager.name, store: manager.store, migrations: manager.heldBehindPostDeploy,
                    postDeploy: pendingPostDeployMigrations)
            }
            return nil
        }
    }

    /// The migrations registered post-deploy that have not run, in manager order.
    private var pendingPostDeployMigrations: [MigrationReference] {
        managers.flatMap { manager in
            let ordinary = Set(manager.heldBehindPostDeploy)
            return manager.postDeploy.filter { !ordinary.contains($0) }.map { MigrationReference(manager: manager.name, version: $0) }
        }
    }

    /// Lists each manager's post-deploy migrations (`versions`, by manager), and the steps held
    /// back from ``steps``; a held resumable migration's progress (from `records`) stays listed.
    mutating func setPostDeploy(
        _ versions: [[Version]], ordinary: [[Version]], heldSteps: [PlannedStep], records: [MigrationRecord]
    ) {
        for index in managers.indices where !versions[index].isEmpty {
            managers[index].postDeploy = versions[index]
            managers[index].heldBehindPostDeploy = ordinary[index]
            let listed = Set(managers[index].pending + versions[index])
            managers[index].inProgress = records[index].inProgress.filter { listed.contains($0.version) }
        }
        postDeploySteps = heldSteps
    }

    /// Marks the managers at `positions` as on a store development mode erases for `changes`.
    mutating func setDevelopmentErase(_ changes: [FingerprintChange], forManagersAt positions: [Int]) {
        for position in positions { managers[position].developmentErase = changes }
    }

    mutating func setDeferred(_ deferred: [[Version]]) {
        for index in managers.indices { managers[index].deferred = deferred[index] }
    }

    /// The steps grouped in waves: the steps of a wave depend only on earlier waves.
    public var waves: [[PlannedStep]] {
        var waves: [[PlannedStep]] = []
        for step in steps {
            if step.wave == waves.count { waves.append([]) }
            waves[step.wave].append(step)
        }
        return waves
    }

    public var description: String {
        var lines = ["Migration plan to app version \(appVersion): "
            + (isUpToDate ? "up to date." : "\(steps.count) step\(steps.count == 1 ? "" : "s") in \(waves.count) wave\(waves.count == 1 ? "" : "s").")]
        for manager in managers {
            lines.append("  \(manager)")
            lines += manager.inProgress.map { "    in progress \($0)" }
            lines += manager.changedFingerprints.map { "    edited since applied (\(manager.fingerprintPolicy.rawValue)): \($0)" }
            lines += (manager.developmentErase ?? []).map { "    edited since applied (erases the store): \($0)" }
        }
        for (index, wave) in waves.enumerated() {
            // From 0, as `PlannedStep.wave` in the JSON and the `waves` array count them.
            lines.append("  wave \(index): " + wave.map(\.description).joined(separator: "; "))
        }
        if !postDeploySteps.isEmpty {
            lines.append("  after the deployment (post-deploy): " + postDeploySteps.map(\.description).joined(separator: "; "))
        }
        lines += diagnostics.map { "  note: \($0)" }
        return lines.joined(separator: "\n")
    }

    /// The plan as a Graphviz DOT digraph: one node per step, clustered by manager, one edge per
    /// dependency; deferred steps dashed, post-deploy steps (``postDeploySteps`` included) dotted.
    /// Render it with `dot -Tsvg plan.dot -o plan.svg`.
    public func graphviz() -> String {
        func quoted(_ text: String) -> String {
            "\"" + text.escapingASCII("\\\"", with: "\\") + "\""
        }
        var lines = ["digraph migrations {", "  rankdir=LR;", "  node [shape=box];"]
        let allSteps = steps + postDeploySteps
        var stepsByManager: [String: [PlannedStep]] = [:]
        for step in allSteps { stepsByManager[step.manager, default: []].append(step) }
        for (index, manager) in managers.enumerated() {
            guard let managerSteps = stepsByManager[manager.name] else { continue }
            lines.append("  subgraph cluster_\(index) {")
            lines.append("    label=\(quoted(manager.name));")
            let deferred = Set(manager.deferred)
            let postDeploy = Set(manager.postDeploy)
            for step in managerSteps {
                // Lines of a node's label, joined by DOT's own line break escape.
                var label = [step.id.description]
                if let name = step.name { label.append(name) }
                var style: String?
                if step.action == .migrate, let version = step.version {
                    if let progress = manager.inProgress.first(where: { $0.version == version }) {
                        label.append(progress.fractionDone.map { "\(Int($0 * 100))% done" } ?? "\(progress.done) done")
                    }
                    if deferred.contains(version) {
                        label.append("(deferred)")
                        style = "dashed"
                    }
                    if postDeploy.contains(version) {
                        label.append("(post-deploy)")
                        style = "dotted"
                    }
                }
                var node = "    \(quoted(step.id.description))"
                if label.count > 1 {
                    let text = "\"" + label.map { $0.escapingASCII("\\\"", with: "\\") }.joined(separator: "\\n") + "\""
                    node += " [label=\(text)\(style.map { ", style=\($0)" } ?? "")]"
                }
                lines.append(node + ";")
            }
            lines.append("  }")
        }
        for step in allSteps {
            for dependency in step.dependencies {
                lines.append("  \(quoted(dependency.description)) -> \(quoted(step.id.description));")
            }
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }
}
