import StoreMigrations

/// The coordinator's semantics as a small pure interpreter: given a scenario, what each launch
/// plans, which calls each body receives, how each step ends, what the records and the data are
/// afterwards, or which error a run throws. No I/O, no concurrency: steps run one at a time in
/// an order their dependencies allow, which is all the real coordinator promises.
///
/// It states DESIGN.md ("Versions", "Records, levels and checkpoints", "Dependencies", "Big
/// steps", "Operations") and the documentation of the public API, with the five rules decided in
/// issue 26: every kind of step applies the newer-store policy under the lock; a start-up run
/// that would hold an ordinary migration behind a post-deploy one is refused; fingerprints of
/// in-progress steps are compared; a batch that does not move its cursor is an error; a hook
/// that finds a newer app version recorded applies the newer-store policy.
struct ReferenceModel {
    /// The error kinds the model names, as the real `MigrationError` cases are named (see
    /// `RealRunner.describe`).
    enum ErrorKind {
        static let storeIsNewer = "storeIsNewer"
        static let lateMigrations = "lateMigrations"
        static let fingerprintsChanged = "fingerprintsChanged"
        static let squashedRangePartWay = "squashedRangePartWay"
        static let adoptedPastAppVersion = "adoptedPastAppVersion"
        static let injected = "injected"
        /// Rule 2 of issue 26.
        static let heldBehindPostDeploy = "heldBehindPostDeploy"
        /// Rule 4 of issue 26.
        static let batchDidNotAdvance = "batchDidNotAdvance"
    }

    struct Progress: Hashable {
        var done: Int
        var fingerprint: String?
    }

    /// A manager's record: applied versions with their fingerprint texts, the baseline mark,
    /// the hook's app version, resumable progress.
    struct Record: Hashable {
        var applied: [Version: String?] = [:]
        var baseline: Version?
        var appVersion: Version?
        var progress: [Version: Progress] = [:]

        var level: Version? {
            let highest = applied.keys.max()
            switch (baseline, highest) {
            case let (baseline?, highest?): return max(baseline, highest)
            case let (baseline, highest): return baseline ?? highest
            }
        }

        func isApplied(_ version: Version) -> Bool {
            if let baseline, version <= baseline { return true }
            return applied[version] != nil
        }

        /// Whether some of `range` is applied (a baseline at or past its start counts) or in
        /// progress, but not its last version: only the replaced migrations can finish it.
        func isPartWay(_ range: ClosedRange<Version>) -> Bool {
            let started = applied.keys.contains(where: range.contains) || baseline.map { $0 >= range.lowerBound } ?? false
                || progress.keys.contains(where: range.contains)
            return started && !isApplied(range.upperBound)
        }

        /// Everything at or below the mark counts as applied: progress it covers is done with.
        mutating func setBaseline(_ version: Version) {
            baseline = version
            progress = progress.filter { $0.key > version }
        }

        mutating func markApplied(_ version: Version, fingerprint: String?) {
            progress[version] = nil
            if applied[version] == nil { applied[version] = .some(fingerprint) }
        }

        var state: RecordState {
            RecordState(
                level: level?.description, baseline: baseline?.description, appVersion: appVersion?.description,
                applied: applied.keys.sorted().map { "\($0)#\((applied[$0] ?? nil) ?? "-")" },
                inProgress: progress.keys.sorted().map { "\($0)@\(progress[$0]!.done)#\(progress[$0]!.fingerprint ?? "-")" })
        }
    }

    let scenario: ModelScenario
    var records: [Record]
    var content: [[String: Int]]
    var calls: [[String]]

    init(_ scenario: ModelScenario) {
        self.scenario = scenario
        records = scenario.managers.map { _ in Record() }
        content = scenario.managers.map { _ in [:] }
        calls = scenario.managers.map { _ in [] }
    }

    /// The outcome of every launch of `scenario`, in order.
    static func outcome(of scenario: ModelScenario) -> ModelOutcome {
        var model = ReferenceModel(scenario)
        var outcome = ModelOutcome()
        for (index, launch) in scenario.launches.enumerated() {
            model.calls = scenario.managers.map { _ in [] }
            var launchOutcome = model.run(launch, index: index, tag: "L\(index)")
            launchOutcome.calls = model.calls
            launchOutcome.records = model.records.map(\.state)
            launchOutcome.content = model.content
            outcome.launches.append(launchOutcome)
        }
        return outcome
    }

    // MARK: - Planning

    enum Action: Hashable {
        case migrate(MigrationSpec)
        case baseline(Version)
        case hook(Version)
        /// A squash on a store with none of its range applied: it runs once for the migrations it replaces.
        case squash(SquashSpec, replaced: [MigrationSpec])

        /// The migrations the step records applied.
        var recorded: [Version] {
            switch self {
            case .migrate(let migration): return [migration.version]
            case .squash(_, let replaced): return replaced.map(\.version)
            case .baseline, .hook: return []
            }
        }

        /// The dependencies declared by the migrations the step runs.
        var dependsOn: [Dependency] {
            switch self {
            case .migrate(let migration): return migration.dependsOn
            case .squash(_, let replaced): return replaced.flatMap(\.dependsOn)
            case .baseline, .hook: return []
            }
        }

        /// The range of the squash the step runs, for its own or a stand-in.
        var squashRange: ClosedRange<Version>? {
            switch self {
            case .migrate(let migration): return migration.standsInFor?.range
            case .squash(let squash, _): return squash.range
            case .baseline, .hook: return nil
            }
        }
    }

    struct Step {
        var manager: Int
        var action: Action
        /// Indices of the steps this one waits for: its manager's previous step, then declared ones.
        var predecessors: [Int] = []
        var deferred = false

        var id: String {
            switch action {
            case .migrate(let migration):
                if migration.standsInFor != nil { return "m\(manager):squash@\(migration.version)" }
                return "m\(manager)@\(migration.version)"
            case .squash(let squash, _): return "m\(manager):squash@\(squash.through)"
            case .baseline(let version): return "m\(manager):baseline@\(version)"
            case .hook(let version): return "m\(manager):appVersionChange@\(version)"
            }
        }
    }

    struct Plan {
        var steps: [Step]
        var summary: PlanSummary
        /// The errors `run()` may throw before any step; empty when it runs.
        var refusals: [ErrorDescription]
        /// The error `plan()` throws, when it throws.
        var thrown: ErrorDescription?
    }

    /// The plan of `launch` on the current records, as `plan(postDeploy:)` gives it.
    func plan(_ launch: Launch, index: Int) -> Plan {
        let app = launch.appVersion
        let registered = launch.registrations(of: scenario.managers, index: index)
        var summaries: [ManagerPlanSummary] = []
        var chains: [[Action]] = []
        var blocking: [ErrorDescription] = []
        var baselineMarks: [Version?] = []
        // What `plan()` throws instead of a plan; a first launch's decision is refused before
        // any squash is looked at.
        var thrown: ErrorDescription?
        var decisionThrown: ErrorDescription?
        for (manager, spec) in scenario.managers.enumerated() {
            let record = records[manager]
            var migrations = registered[manager]
            let squash = launch.squash(of: spec, index: index)
            let replaced = squash.map { squash in
                spec.migrations.filter { squash.spec.range.contains($0.version) }.sorted { $0.version < $1.version }
            } ?? []
            if let squash, squash.originalsRemoved {
                // The squash stands in at its last version, declaring its originals' dependencies.
                var standIn = MigrationSpec(version: squash.spec.through)
                standIn.dependsOn = Array(Set(replaced.flatMap(\.dependsOn)))
                standIn.standsInFor = squash.spec
                migrations.append(standIn)
                migrations.sort { $0.version < $1.version }
            }
            let runnable = migrations.filter { $0.version.base <= app }
            var summary = ManagerPlanSummary()
            summary.ahead = migrations.filter { $0.version.base > app }.map(\.version.description)
            var chain: [Action] = []
            var baselineMark: Version?
            var newer = false
            if let level = record.level, level.base > app {
                newer = true
                summary.newerStore = spec.newerStore.rawValue
                if spec.newerStore == .fail { blocking.append(.init(kind: ErrorKind.storeIsNewer, manager: "m\(manager)")) }
            } else if record.level == nil {
                summary.firstLaunch = spec.firstLaunch.description
                switch spec.firstLaunch {
                case .runAll:
                    chain += runnable.map { .migrate($0) }
                case .baseline:
                    baselineMark = max(runnable.last?.version ?? app, app)
                    chain.append(.baseline(baselineMark!))
                case .adopt(let version):
                    if version > app, decisionThrown == nil {
                        decisionThrown = .init(kind: ErrorKind.adoptedPastAppVersion, manager: "m\(manager)")
                    }
                    baselineMark = version
                    chain.append(.baseline(version))
                    chain += runnable.filter { $0.version > version }.map { .migrate($0) }
                }
            } else {
                let level = record.level!
                let late = runnable.filter { $0.version <= level && !record.isApplied($0.version) }
                summary.late = late.map(\.version.description)
                if spec.late == .run { chain += late.map { .migrate($0) } }
                if spec.late == .fail, !late.isEmpty {
                    blocking.append(.init(kind: ErrorKind.lateMigrations, manager: "m\(manager)"))
                }
                chain += runnable.filter { $0.version > level }.map { .migrate($0) }
            }
            if let (squash, originalsRemoved) = squash.map({ ($0.spec, $0.originalsRemoved) }), !newer {
                if originalsRemoved {
                    // Only the originals, no longer registered, could finish a range part-way;
                    // a first launch's mark counts as recorded.
                    var marked = record
                    if let baselineMark { marked.baseline = baselineMark }
                    if marked.isPartWay(squash.range), thrown == nil {
                        thrown = .init(kind: ErrorKind.squashedRangePartWay, manager: "m\(manager)")
                    }
                } else if baselineMark.map({ squash.from > $0 }) ?? true, replaced.allSatisfy({ $0.version.base <= app }),
                          record.level.map({ squash.from > $0 }) ?? true,
                          !record.progress.keys.contains(where: squash.range.contains),
                          let first = chain.firstIndex(where: { $0.recorded.first == squash.from }) {
                    // A store with none of the range applied runs the squash instead.
                    chain.removeAll { action in
                        if case .migrate(let migration) = action { return squash.range.contains(migration.version) }
                        return false
                    }
                    chain.insert(.squash(squash, replaced: replaced), at: first)
                }
            }
            if spec.hasHook, !newer, record.appVersion != app { chain.append(.hook(app)) }
            // Applied migrations, and (rule 3) in-progress ones, whose fingerprint changed.
            if spec.fingerprint != .ignore {
                for migration in migrations.sorted(by: { $0.version < $1.version }) {
                    guard let current = launch.fingerprint(of: migration, manager: manager) else { continue }
                    let recorded: String?
                    if let applied = record.applied[migration.version] {
                        recorded = applied
                    } else {
                        recorded = record.progress[migration.version]?.fingerprint
                    }
                    if let recorded, recorded != current { summary.changedFingerprints.append("m\(manager)@\(migration.version)") }
                }
            }
            if spec.fingerprint == .fail, !summary.changedFingerprints.isEmpty {
                blocking.append(.init(kind: ErrorKind.fingerprintsChanged, manager: "m\(manager)"))
            }
            summaries.append(summary)
            chains.append(chain)
            baselineMarks.append(baselineMark)
        }
        // The first manager's first refusal, as `blockingErrors.first` gives it.
        var refusals = blocking.prefix(1).map { $0 }

        // Every step, manager by manager, with its chain and declared predecessors.
        var steps: [Step] = []
        var firstStep: [Int] = []
        for (manager, chain) in chains.enumerated() {
            firstStep.append(steps.count)
            for (position, action) in chain.enumerated() {
                steps.append(Step(manager: manager, action: action, predecessors: position > 0 ? [steps.count - 1] : []))
            }
        }
        func stepIndex(of dependency: Dependency) -> Int? {
            if let mark = baselineMarks[dependency.manager], dependency.version <= mark { return firstStep[dependency.manager] }
            return steps.indices.first { index in
                guard steps[index].manager == dependency.manager else { return false }
                if let range = steps[index].action.squashRange, range.contains(dependency.version) { return true }
                return steps[index].action.recorded.contains(dependency.version)
            }
        }
        for index in steps.indices {
            for dependency in steps[index].action.dependsOn {
                if let blocker = stepIndex(of: dependency), !steps[index].predecessors.contains(blocker) {
                    steps[index].predecessors.append(blocker)
                }
            }
        }

        // Post-deploy: those migrations and everything after them (hooks excepted) are held,
        // each step by the earliest release (base version) of the post-deploy migrations holding it.
        var holder: [Int: Version] = [:]
        let roots = steps.indices.compactMap { index -> (Int, Version)? in
            if case .migrate(let migration) = steps[index].action, migration.postDeploy { return (index, migration.version.base) }
            return nil
        }.sorted { $0.1 < $1.1 }
        for (root, release) in roots {
            var stack = [root]
            while let index = stack.popLast() {
                if holder[index] != nil { continue }
                if case .hook = steps[index].action { continue }
                holder[index] = release
                stack += steps.indices.filter { steps[$0].predecessors.contains(index) }
            }
        }
        let held = Set(holder.keys)
        for index in held.sorted() {
            summaries[steps[index].manager].postDeploy += steps[index].action.recorded.map(\.description)
        }
        // An ordinary migration of a later release held behind an earlier release's post-deploy
        // one: the start-up refuses (the same release's dependents just wait).
        let heldOrdinary = held.sorted().filter { index in
            if case .migrate(let migration) = steps[index].action { return !migration.postDeploy && migration.version.base > holder[index]! }
            return steps[index].action.recorded.contains { $0.base > holder[index]! }
        }
        if !launch.runsPostDeploy, !heldOrdinary.isEmpty {
            refusals.append(.init(kind: ErrorKind.heldBehindPostDeploy, manager: nil))
        }
        let kept = steps.indices.filter { launch.runsPostDeploy || !held.contains($0) }
        // Renumbered without the held steps; a manager's step follows its previous kept one.
        var newIndex: [Int: Int] = [:]
        for (position, index) in kept.enumerated() { newIndex[index] = position }
        var keptSteps: [Step] = []
        for index in kept {
            var step = steps[index]
            let previous = keptSteps.lastIndex { $0.manager == step.manager }
            let declared = step.predecessors.filter { steps[$0].manager != step.manager }.compactMap { newIndex[$0] }
            step.predecessors = (previous.map { [$0] } ?? []) + declared
            keptSteps.append(step)
        }

        // Deferral: deferred migrations, and by the policy the steps around them.
        for index in keptSteps.indices {
            if case .migrate(let migration) = keptSteps[index].action { keptSteps[index].deferred = migration.isDeferred }
        }
        let order = topologicalOrder(keptSteps)
        switch launch.dependentsOfDeferred {
        case .wait:
            for index in order where !keptSteps[index].deferred {
                keptSteps[index].deferred = keptSteps[index].predecessors.contains { keptSteps[$0].deferred }
            }
        case .finishInline:
            for index in order.reversed() where !keptSteps[index].deferred {
                for predecessor in keptSteps[index].predecessors { keptSteps[predecessor].deferred = false }
            }
        }

        for step in keptSteps {
            summaries[step.manager].steps.append(step.id)
            summaries[step.manager].pending += step.action.recorded.map(\.description)
            if step.deferred { summaries[step.manager].deferred += step.action.recorded.map(\.description) }
        }
        for manager in summaries.indices {
            let listed = summaries[manager].pending + summaries[manager].postDeploy
            summaries[manager].inProgress = records[manager].progress.keys.sorted()
                .filter { listed.contains($0.description) }.map(\.description)
        }
        let isUpToDate = keptSteps.isEmpty && refusals.isEmpty
        return Plan(
            steps: keptSteps, summary: PlanSummary(managers: summaries, isUpToDate: isUpToDate), refusals: refusals, thrown: decisionThrown ?? thrown)
    }

    /// Step indices such that every step comes after its predecessors (the first ready step each time).
    func topologicalOrder(_ steps: [Step]) -> [Int] {
        var order: [Int] = []
        var placed = Set<Int>()
        while order.count < steps.count {
            let next = steps.indices.first { !placed.contains($0) && steps[$0].predecessors.allSatisfy(placed.contains) }!
            order.append(next)
            placed.insert(next)
        }
        return order
    }

    // MARK: - Running

    /// Runs `launch` (the `index`th of the scenario): baseline calls, plan, refusal or the
    /// interleaved launches then the steps. Calls are logged under `tag`.
    mutating func run(_ launch: Launch, index: Int, tag: String) -> LaunchOutcome {
        for (manager, version) in launch.baselineCalls.sorted(by: { $0.key < $1.key }) where records[manager].level == nil {
            records[manager].setBaseline(version)
        }
        let plan = plan(launch, index: index)
        if let thrown = plan.thrown { return LaunchOutcome(plan: nil, result: .refused([thrown])) }
        var outcome = LaunchOutcome(plan: plan.summary, result: .refused(plan.refusals))
        guard plan.refusals.isEmpty else { return outcome }
        // The other app version's launch runs completely once this one has planned.
        for (position, inner) in launch.interleaved.enumerated() {
            outcome.interleaved.append(run(inner, index: index, tag: "\(tag)i\(position)"))
        }
        var words = [String](repeating: "", count: plan.steps.count)
        for step in topologicalOrder(plan.steps) {
            words[step] = execute(plan.steps[step], of: launch, tag: tag, predecessors: plan.steps[step].predecessors.map { words[$0] })
        }
        let succeeded = words.allSatisfy { !$0.hasPrefix("failed") && $0 != "skipped" }
        outcome.result = .ran(succeeded: succeeded, steps: scenario.managers.indices.map { manager in
            plan.steps.indices.filter { plan.steps[$0].manager == manager }.map { "\(plan.steps[$0].id)=\(words[$0])" }
        })
        return outcome
    }

    /// Runs one step as the step executor does, on the record as it is now (read again under the
    /// lock), and returns how it ended: `applied`, `alreadyApplied`, `failed(<kind>)`, `skipped`,
    /// `deferred`, `inProgress`.
    mutating func execute(_ step: Step, of launch: Launch, tag: String, predecessors: [String]) -> String {
        if predecessors.contains(where: { $0.hasPrefix("failed") || $0 == "skipped" }) { return "skipped" }
        if predecessors.contains(where: { $0 == "deferred" || $0 == "inProgress" }) { return "deferred" }
        if launch.kind != .background, step.deferred { return "deferred" }
        let manager = step.manager
        let spec = scenario.managers[manager]
        let app = launch.appVersion
        // Rule 1: every kind of step finds a newer store under the lock.
        if let level = records[manager].level, level.base > app {
            return spec.newerStore == .ignore ? "alreadyApplied" : "failed(\(ErrorKind.storeIsNewer))"
        }
        switch step.action {
        case .baseline(let version):
            if records[manager].level != nil { return "alreadyApplied" }
            records[manager].setBaseline(version)
            return "applied"
        case .hook(let version):
            // Rule 5: the hook runs on every change of app version, a downgrade too.
            let recorded = records[manager].appVersion
            if recorded == version { return "alreadyApplied" }
            calls[manager].append("\(tag) hook \(recorded?.description ?? "none")->\(version)")
            if launch.failingHooks.contains(manager) { return "failed(\(ErrorKind.injected))" }
            records[manager].appVersion = version
            return "applied"
        case .squash(let squash, let replaced):
            return runSquash(squash, replaced: replaced, records: replaced.map {
                ($0.version, launch.fingerprint(of: $0, manager: manager))
            }, manager: manager, launch: launch, tag: tag)
        case .migrate(let migration) where migration.standsInFor != nil:
            let squash = migration.standsInFor!
            let replaced = spec.migrations.filter { squash.range.contains($0.version) }
            return runSquash(squash, replaced: replaced, records: [(squash.through, nil)], manager: manager, launch: launch, tag: tag)
        case .migrate(let migration):
            let key = MigrationKey(manager: manager, version: migration.version)
            let fingerprint = launch.fingerprint(of: migration, manager: manager)
            guard case let .resumable(units, batch, _) = migration.body else {
                if records[manager].isApplied(migration.version) { return "alreadyApplied" }
                calls[manager].append("\(tag) \(key)")
                if launch.failures[key] != nil { return "failed(\(ErrorKind.injected))" }
                records[manager].markApplied(migration.version, fingerprint: fingerprint)
                content[manager][key.description, default: 0] += 1
                return "applied"
            }
            var batches = 0
            while true {
                if batches > 0, launch.kind == .launch(zeroBudget: true) { return "inProgress" }
                if let level = records[manager].level, level.base > app {
                    return spec.newerStore == .ignore ? "alreadyApplied" : "failed(\(ErrorKind.storeIsNewer))"
                }
                // Rule 3 under the lock: progress committed meanwhile by another app version's
                // edited body is refused as at planning.
                if spec.fingerprint == .fail, let fingerprint,
                   let recorded = records[manager].progress[migration.version]?.fingerprint, recorded != fingerprint {
                    return "failed(\(ErrorKind.fingerprintsChanged))"
                }
                if records[manager].isApplied(migration.version) { return batches == 0 ? "alreadyApplied" : "applied" }
                let start = records[manager].progress[migration.version]?.done ?? 0
                calls[manager].append("\(tag) \(key) after \(start)")
                if let failing = launch.failures[key], start >= failing { return "failed(\(ErrorKind.injected))" }
                if let stuck = launch.stuck[key], start >= stuck, start > 0 { return "failed(\(ErrorKind.batchDidNotAdvance))" }
                let end = min(start + batch, units)
                content[manager][key.description, default: 0] += end - start
                if end == units {
                    records[manager].markApplied(migration.version, fingerprint: fingerprint)
                    return "applied"
                }
                records[manager].progress[migration.version] = Progress(done: end, fingerprint: fingerprint)
                batches += 1
            }
        }
    }

    /// Runs a squash under the lock: refused on a store part-way through its range, done when
    /// its last version is applied, else one call with the replaced migrations' effects, and
    /// `records` (each replaced version with its fingerprint, or the stand-in's version alone)
    /// applied.
    mutating func runSquash(
        _ squash: SquashSpec, replaced: [MigrationSpec], records recorded: [(Version, String?)], manager: Int,
        launch: Launch, tag: String
    ) -> String {
        if records[manager].isPartWay(squash.range) { return "failed(\(ErrorKind.squashedRangePartWay))" }
        if records[manager].isApplied(squash.through) { return "alreadyApplied" }
        calls[manager].append("\(tag) m\(manager):squash@\(squash.through)")
        if replaced.contains(where: { launch.failures[MigrationKey(manager: manager, version: $0.version)] != nil }) {
            return "failed(\(ErrorKind.injected))"
        }
        for migration in replaced {
            let key = MigrationKey(manager: manager, version: migration.version)
            if case let .resumable(units, _, _) = migration.body {
                content[manager][key.description, default: 0] += units
            } else {
                content[manager][key.description, default: 0] += 1
            }
        }
        for (version, fingerprint) in recorded { records[manager].markApplied(version, fingerprint: fingerprint) }
        return "applied"
    }
}
