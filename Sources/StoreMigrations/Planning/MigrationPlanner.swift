/// Turns a validated graph and the managers' records into the pending steps, their dependencies
/// and their order. O(V + E).
enum MigrationPlanner {
    /// How one manager's work begins, decided from its record and policies.
    struct Start {
        var firstLaunch: FirstLaunchDecision?
        var newerStore: NewerStorePolicy?
        /// The baseline mark a first-launch baseline records.
        var baseline: Version?
        /// Positions of the migrations that run, ascending: the late ones that run, then a range.
        var pendingLate: [Int] = []
        var pendingRange: Range<Int> = 0..<0
        /// Positions of late migrations: below the level, never applied.
        var late: [Int] = []
        /// The app version the store records for the manager once any reset has run.
        var recordedAppVersion: Version?

        var pendingCount: Int { pendingLate.count + pendingRange.count }
    }

    /// - Parameters:
    ///   - targets: When given, only these migrations and the steps they depend on.
    ///   - postDeploy: Whether the plan includes the steps that wait for the deployment
    ///     (``PostDeploy``); otherwise they are listed apart (``MigrationPlan/postDeploySteps``).
    static func plan(
        _ graph: MigrationGraph, inputs: [PlanningInput], targets: [MigrationReference]? = nil, postDeploy: Bool = false
    ) throws -> ExecutablePlan {
        let managers = graph.managers
        let appVersion = graph.appVersion
        try rejectResetsOfSharedStores(graph, inputs)
        for index in managers.indices where !inputs[index].squashes.isEmpty {
            try SquashedMigration.validate(
                inputs[index].squashes, versions: managers[index].versions, manager: managers[index].name, store: inputs[index].store)
        }
        var starts: [Start] = []
        starts.reserveCapacity(managers.count)
        for index in managers.indices {
            starts.append(try start(of: managers[index], inputs[index], aheadStart: graph.aheadStart[index], appVersion: appVersion))
        }

        // Steps in generation order: manager by manager, each in chain order.
        var steps = GeneratedSteps(managerVersions: managers.map(\.versions))
        steps.reserveCapacity(starts.reduce(0) { $0 + $1.pendingCount } + 2 * managers.count)
        var stepOfNode = [Int32](repeating: -1, count: graph.nodeCount)
        var baselineStep = [Int](repeating: -1, count: managers.count)
        for index in managers.indices {
            let start = starts[index]
            if start.newerStore == .reset { _ = steps.append(manager: index, .reset(newerThan: appVersion)) }
            if let baseline = start.baseline { baselineStep[index] = steps.append(manager: index, .baseline(baseline)) }
            let versions = managers[index].versions, resumable = inputs[index].resumable
            let squashes = try squashSteps(of: managers[index], inputs[index], start)
            // Positions below it belong to a squash already appended.
            var squashedUpTo = 0
            func appendMigration(at position: Int) {
                if !squashes.isEmpty {
                    guard position >= squashedUpTo else { return }
                    if let squash = squashes[position] {
                        // Every replaced migration is the squash's step to a dependent.
                        let step = Int32(steps.append(manager: index, .squash(squash)))
                        for replaced in squash.recorded { stepOfNode[graph.firstNode[index] + replaced] = step }
                        squashedUpTo = squash.recorded.upperBound
                        return
                    }
                }
                let migration = Step.Migration(position: position, version: versions[position])
                let step = !resumable.isEmpty && resumable[position] ? Step.batches(migration) : .migrate(migration)
                stepOfNode[graph.firstNode[index] + position] = Int32(steps.append(manager: index, step))
            }
            for position in start.pendingLate { appendMigration(at: position) }
            for position in start.pendingRange { appendMigration(at: position) }
            if targets == nil, inputs[index].hasHook, start.newerStore != .ignore, start.newerStore != .fail,
               start.recordedAppVersion != appVersion {
                _ = steps.append(manager: index, .appVersionChange(to: appVersion))
            }
        }

        /// The step a dependent must wait for, or `nil` when the dependency is satisfied.
        func blockingStep(_ target: Int) -> Int? {
            let manager = graph.managerOfNode(target)
            if baselineStep[manager] >= 0, let baseline = starts[manager].baseline,
               managers[manager].versions[target - graph.firstNode[manager]] <= baseline {
                return baselineStep[manager]
            }
            return stepOfNode[target] >= 0 ? Int(stepOfNode[target]) : nil
        }

        /// Whether the migration at `target` counts as applied once the planned resets and
        /// baselines have run, for the diagnostics.
        func countsAsApplied(_ target: Int) -> Bool {
            let manager = graph.managerOfNode(target)
            let version = managers[manager].versions[target - graph.firstNode[manager]]
            switch starts[manager].newerStore {
            case .fail?, .ignore?: return true
            case .reset?: return false
            case nil: break
            }
            if let baseline = starts[manager].baseline { return version <= baseline }
            return inputs[manager].record.isApplied(version)
        }

        var diagnostics: [MigrationPlan.Diagnostic] = []
        for index in managers.indices {
            for position in 0..<graph.aheadStart[index] {
                let node = graph.firstNode[index] + position
                let step = Int(stepOfNode[node])
                if step >= 0 {
                    guard graph.hasDependencies(node) else { continue }
                    // A squash's step gathers the edges of every migration it replaces.
                    var firstEdge = steps.edgeTo.count
                    while firstEdge > 0, steps.edgeTo[firstEdge - 1] == step { firstEdge -= 1 }
                    for target in graph.dependencies(of: node) {
                        // An edge already implied by the chain, or declared twice, is listed once
                        // (the step's edges so far are the last ones added).
                        guard let blocker = blockingStep(target), blocker != step,
                              !(steps.hasChainPredecessor(step) && blocker == step - 1),
                              !steps.edgeFrom[firstEdge...].contains(blocker)
                        else { continue }
                        steps.addEdge(from: blocker, to: step)
                    }
                } else if graph.hasDependencies(node), starts[index].newerStore != .reset,
                          starts[index].baseline == nil, inputs[index].record.isApplied(managers[index].versions[position]) {
                    // Only a migration that declares dependencies can have one missing.
                    for target in graph.dependencies(of: node) where !countsAsApplied(target) {
                        let targetManager = graph.managerOfNode(target)
                        diagnostics.append(.init(
                            migration: graph.reference(of: node), dependency: graph.reference(of: target),
                            dependencyLevel: starts[targetManager].newerStore == .reset ? nil : inputs[targetManager].record.level))
                    }
                }
            }
        }

        if let targets {
            steps = try steps.keepingAncestors(of: targets.map { try targetStep($0, graph: graph, stepOfNode: stepOfNode) })
        }
        let full = order(graph: graph, inputs: inputs, starts: starts, steps: steps, diagnostics: diagnostics)
        return holdingPostDeploy(
            full, steps: steps, graph: graph, inputs: inputs, starts: starts, diagnostics: diagnostics, postDeploy: postDeploy)
    }

    /// The step of a targeted migration, or `nil` when it is applied already.
    private static func targetStep(_ target: MigrationReference, graph: MigrationGraph, stepOfNode: [Int32]) throws -> Int? {
        guard let manager = graph.managers.firstIndex(where: { $0.name == target.manager }) else {
            throw MigrationError.unknownTarget(target)
        }
        let versions = graph.managers[manager].versions
        let position = MigrationGraph.partition(versions) { $0 >= target.version }
        guard position < versions.count, versions[position] == target.version else { throw MigrationError.unknownTarget(target) }
        guard position < graph.aheadStart[manager] else { throw MigrationError.targetAhead(target, appVersion: graph.appVersion) }
        let step = Int(stepOfNode[graph.firstNode[manager] + position])
        return step >= 0 ? step : nil
    }

    /// By the position of the first migration each replaces, the squashes the manager's store
    /// takes: those whose replaced migrations are all pending above the level, none in progress,
    /// and the stand-ins of squashes whose originals are gone, where the store is not part-way
    /// through their range (an error otherwise: only the originals could finish it).
    private static func squashSteps(
        of manager: MigrationGraph.Manager, _ input: PlanningInput, _ start: Start
    ) throws -> [Int: Step.Squash] {
        guard !input.squashes.isEmpty, start.newerStore != .fail, start.newerStore != .ignore else { return [:] }
        // A reset forgets the record before anything else runs; a first launch's baseline or
        // adoption records its mark before any squash could.
        let record = start.newerStore == .reset ? nil : start.baseline.map { MigrationRecord(baseline: $0) } ?? input.record
        var steps: [Int: Step.Squash] = [:]
        for (index, squash) in input.squashes.enumerated() {
            let step = Step.Squash(index: index, range: squash.range, recorded: squash.recorded)
            if squash.originalsRemoved {
                if SquashPath.isPartWay(squash.range, in: record) {
                    throw MigrationError.squashedRangePartWay(
                        manager: manager.name, store: input.store, squash: squash.through,
                        applied: SquashPath.progress(in: squash.range, of: record).applied, originalsRegistered: false)
                }
                steps[squash.recorded.lowerBound] = step
            } else if start.pendingRange.contains(squash.recorded.lowerBound),
                      start.pendingRange.contains(squash.recorded.upperBound - 1),
                      !SquashPath.progress(in: squash.range, of: record).inProgress {
                steps[squash.recorded.lowerBound] = step
            }
        }
        return steps
    }

    /// A reset throws away the whole store: refused when the store also holds other managers,
    /// whose records would then describe data that is gone.
    private static func rejectResetsOfSharedStores(_ graph: MigrationGraph, _ inputs: [PlanningInput]) throws {
        for (index, input) in inputs.enumerated() where input.newerStorePolicy == .reset {
            let others = inputs.indices.filter { $0 != index && inputs[$0].storeIndex == input.storeIndex }.map { graph.managers[$0].name }
            if !others.isEmpty {
                throw MigrationError.resetOfSharedStore(manager: graph.managers[index].name, store: input.store, otherManagers: others)
            }
        }
    }

    private static func start(of manager: MigrationGraph.Manager, _ input: PlanningInput, aheadStart: Int, appVersion: Version) throws -> Start {
        let record = input.record
        var start = Start(recordedAppVersion: record.appVersion)
        if let level = record.level, level.base > appVersion {
            switch input.newerStorePolicy {
            case .fail, .ignore:
                start.newerStore = input.newerStorePolicy
                return start
            case .reset:
                guard input.isRebuildable else {
                    throw MigrationError.resetNotSupported(manager: manager.name, store: input.store)
                }
                start.newerStore = .reset
                start.recordedAppVersion = nil
                start.pendingRange = 0..<aheadStart
                return start
            }
        }
        guard let level = record.level else {
            let decision = input.firstLaunch ?? .runAll
            start.firstLaunch = decision
            switch decision {
            case .runAll:
                start.pendingRange = 0..<aheadStart
            case .baseline:
                let highest = aheadStart > 0 ? manager.versions[aheadStart - 1] : appVersion
                start.baseline = max(highest, appVersion)
            case .adopt(let version):
                if let error = version.parseError {
                    throw MigrationError.invalidVersion(text: error.text, reason: error.reason, manager: manager.name)
                }
                guard version <= appVersion else {
                    throw MigrationError.adoptedPastAppVersion(
                        manager: manager.name, store: input.store, version: version, appVersion: appVersion)
                }
                start.baseline = version
                start.pendingRange = MigrationGraph.partition(manager.versions) { $0 > version }..<aheadStart
            }
            return start
        }
        // Below the level, only a version missing from the record is pending (late); above it,
        // every version is. The versions and the applied set are both ascending, so one merge
        // of the two finds the late ones: O(V + applied), no search per version.
        let firstAbove = min(MigrationGraph.partition(manager.versions) { $0 > level }, aheadStart)
        let coveredByBaseline = record.baseline.map { baseline in
            min(MigrationGraph.partition(manager.versions) { $0 > baseline }, firstAbove)
        } ?? 0
        record.applied.withUnsafeBufferPointer { applied in
            manager.versions.withUnsafeBufferPointer { versions in
                var next = 0
                for position in coveredByBaseline..<firstAbove {
                    while next < applied.count, applied[next].version < versions[position] { next += 1 }
                    // Each applied version matches one registered version at most (both are
                    // ascending and distinct).
                    if next < applied.count, applied[next].version == versions[position] {
                        next += 1
                        continue
                    }
                    start.late.append(position)
                }
            }
        }
        if input.latePolicy == .run { start.pendingLate = start.late }
        start.pendingRange = firstAbove..<aheadStart
        return start
    }

    /// Steps in generation order (manager by manager, each in chain order) and the dependency
    /// edges between them other than the chain, which is implicit: a step follows the previous
    /// one when both belong to the same manager.
    ///
    /// Steps are kept as integers, not identifiers (a name and versions to copy and release per
    /// step): a migration's version is its manager's version at its position, and the few other
    /// steps keep theirs aside. Identifiers are made once, for the plan. Indices are 32-bit: a
    /// plan of 100,000 steps makes and frees every one of these arrays, and its time goes as much
    /// to the memory as to the work.
    struct GeneratedSteps {
        var managers: [Int32] = []
        var steps: StepList
        var edgeFrom: [Int] = []
        var edgeTo: [Int] = []

        init(managerVersions: [[Version]]) {
            steps = StepList(managerVersions: managerVersions)
        }

        var count: Int { managers.count }

        mutating func reserveCapacity(_ capacity: Int) {
            managers.reserveCapacity(capacity)
            steps.reserveCapacity(capacity)
        }

        mutating func append(manager: Int, _ step: Step) -> Int {
            let index = managers.count
            managers.append(Int32(manager))
            steps.append(step)
            return index
        }

        func step(_ index: Int) -> Step { steps[index, manager: Int(managers[index])] }

        mutating func addEdge(from predecessor: Int, to step: Int) {
            edgeFrom.append(predecessor)
            edgeTo.append(step)
        }

        func hasChainPredecessor(_ step: Int) -> Bool { step > 0 && managers[step - 1] == managers[step] }

        /// Every edge, chain included.
        func allEdges() -> (from: [Int], to: [Int]) {
            var from: [Int] = [], to: [Int] = []
            from.reserveCapacity(count + edgeFrom.count)
            to.reserveCapacity(count + edgeFrom.count)
            for step in 0..<count where hasChainPredecessor(step) {
                from.append(step - 1)
                to.append(step)
            }
            return (from + edgeFrom, to + edgeTo)
        }

        /// The edges other than the chain, ordered by the step that waits, each step's in the
        /// order they were added: the planner adds them step by step, so they usually are already
        /// (a stable counting sort otherwise). Step `s` waits for `from[i]` wherever `to[i] == s`.
        func declaredEdgesByStep() -> (from: [Int], to: [Int]) {
            if edgeTo.indices.dropFirst().allSatisfy({ edgeTo[$0 - 1] <= edgeTo[$0] }) { return (edgeFrom, edgeTo) }
            var start = [Int](repeating: 0, count: count + 1)
            for step in edgeTo { start[step + 1] += 1 }
            for step in 0..<count { start[step + 1] += start[step] }
            var from = [Int](repeating: 0, count: edgeTo.count), to = from
            for edge in edgeTo.indices {
                from[start[edgeTo[edge]]] = edgeFrom[edge]
                to[start[edgeTo[edge]]] = edgeTo[edge]
                start[edgeTo[edge]] += 1
            }
            return (from, to)
        }

        /// Each step's wave: the length of the longest chain of predecessors reaching it.
        ///
        /// When every declared predecessor was generated before its step (dependencies on
        /// managers created earlier, as apps usually declare them), generation order is a
        /// topological order, and one pass in that order finds every wave; otherwise Kahn's
        /// algorithm does. The graph is acyclic (validated), so every step has a wave.
        func waves(declared: (from: [Int], to: [Int])) -> [Int32] {
            guard edgeFrom.indices.allSatisfy({ edgeFrom[$0] < edgeTo[$0] }) else {
                let (from, to) = allEdges()
                var topological = TopologicalOrder(count: count, from: from, to: to)
                return topological.waves().map { Int32($0!) }
            }
            var wave = [Int32](repeating: 0, count: count)
            wave.withUnsafeMutableBufferPointer { wave in
                managers.withUnsafeBufferPointer { managers in
                    var edge = 0
                    for step in 0..<count {
                        var depth: Int32 = step > 0 && managers[step - 1] == managers[step] ? wave[step - 1] + 1 : 0
                        while edge < declared.to.count, declared.to[edge] == step {
                            depth = max(depth, wave[declared.from[edge]] + 1)
                            edge += 1
                        }
                        wave[step] = depth
                    }
                }
            }
            return wave
        }

        /// Only `targets` (`nil`: applied already) and the steps they wait for, transitively.
        func keepingAncestors(of targets: [Int?]) -> GeneratedSteps {
            let (from, to) = allEdges()
            let predecessors = TopologicalOrder(count: count, from: to, to: from)
            var kept = [Bool](repeating: false, count: count)
            var stack = targets.compactMap { $0 }
            while let step = stack.popLast() {
                guard !kept[step] else { continue }
                kept[step] = true
                stack.append(contentsOf: predecessors.successors(of: step))
            }
            return keeping(kept)
        }

        /// Only the steps `kept` says, in the same order, with the edges between them. A step
        /// whose chain predecessor is dropped follows the manager's previous kept step.
        func keeping(_ kept: [Bool]) -> GeneratedSteps {
            var newIndex = [Int](repeating: -1, count: count)
            var result = self
            result.managers = []
            result.steps = steps.withoutSteps
            result.edgeFrom = []
            result.edgeTo = []
            for step in 0..<count where kept[step] {
                newIndex[step] = result.append(manager: Int(managers[step]), self.step(step))
            }
            for edge in edgeFrom.indices where kept[edgeTo[edge]] && kept[edgeFrom[edge]] {
                result.addEdge(from: newIndex[edgeFrom[edge]], to: newIndex[edgeTo[edge]])
            }
            return result
        }
    }

    /// The names of the late migrations at `positions` of `manager` that have one.
    private static func lateNames(_ positions: [Int], of manager: MigrationGraph.Manager, _ input: PlanningInput) -> [Version: String] {
        guard !input.names.isEmpty else { return [:] }
        var names: [Version: String] = [:]
        for position in positions { names[manager.versions[position]] = input.names[position] }
        return names
    }

    /// The migrations of `manager` whose registered fingerprint differs from the recorded one, by
    /// version: the applied ones, and the resumable ones part-way whose progress was committed
    /// under another fingerprint; none under ``FingerprintPolicy/ignore``. The applied set and the
    /// versions both ascend, so one walk side by side finds the applied ones: O(V + applied), and
    /// nothing when no migration has a fingerprint.
    private static func changedFingerprints(of manager: MigrationGraph.Manager, _ input: PlanningInput) -> [FingerprintChange] {
        guard input.fingerprintPolicy != .ignore, !input.fingerprints.isEmpty else { return [] }
        var changes: [FingerprintChange] = []
        let applied = input.record.applied
        var next = 0
        for (position, version) in manager.versions.enumerated() {
            while next < applied.count, applied[next].version < version { next += 1 }
            guard next < applied.count else { break }
            guard applied[next].version == version, let current = input.fingerprints[position],
                  current.differs(fromRecorded: applied[next].fingerprint), let recorded = applied[next].fingerprint
            else { continue }
            changes.append(FingerprintChange(
                migration: MigrationReference(manager: manager.name, version: version),
                name: input.names.isEmpty ? nil : input.names[position], recorded: recorded, current: current))
        }
        // A resumable migration part-way is compared too: its next batch would run the edited
        // body from where the earlier one stopped.
        for progress in input.record.inProgress {
            let position = MigrationGraph.partition(manager.versions) { $0 >= progress.version }
            guard position < manager.versions.count, manager.versions[position] == progress.version,
                  let current = input.fingerprints[position], current.differs(fromRecorded: progress.fingerprint),
                  let recorded = progress.fingerprint
            else { continue }
            changes.append(FingerprintChange(
                migration: MigrationReference(manager: manager.name, version: progress.version),
                name: input.names.isEmpty ? nil : input.names[position], recorded: recorded, current: current,
                isInProgress: true))
        }
        if !input.record.inProgress.isEmpty { changes.sort { $0.migration.version < $1.migration.version } }
        return changes
    }

    /// `name`, stored inline when it fits (15 UTF-8 bytes at most) rather than in a buffer of its
    /// own: every step and identifier of a plan holds its manager's name, and copying or freeing
    /// an inline string changes no reference count. (A name made by interpolation, such as
    /// `"store\(index)"`, has a buffer even when it is short.)
    private static func inline(_ name: String) -> String {
        guard name.utf8.count <= 15 else { return name }
        var name = name
        return name.withUTF8 { String(decoding: $0, as: UTF8.self) }
    }

    /// Computes waves, then orders steps by wave and, within a wave, by manager registration
    /// order: a counting sort, since a manager has at most one step a wave.
    ///
    /// The plan is built in a few passes over flat arrays, with no allocation per step but for
    /// the steps that wait for more than their chain predecessor. The pass that makes the steps
    /// reads in generation order (a manager's versions one after the other), which keeps the
    /// versions it reads in the cache, and writes each step at its place in the plan.
    static func order(
        graph: MigrationGraph, inputs: [PlanningInput], starts: [Start], steps: GeneratedSteps,
        diagnostics: [MigrationPlan.Diagnostic]
    ) -> ExecutablePlan {
        let count = steps.count
        let declared = steps.declaredEdgesByStep()
        let wave = steps.waves(declared: declared)

        let waveCount = Int(wave.max() ?? -1) + 1
        var waveStart = [Int](repeating: 0, count: waveCount + 1)
        for step in 0..<count { waveStart[Int(wave[step]) + 1] += 1 }
        for index in 0..<waveCount { waveStart[index + 1] += waveStart[index] }
        var planIndex = [Int32](repeating: 0, count: count)
        var generationIndex = [Int32](repeating: 0, count: count)
        planIndex.withUnsafeMutableBufferPointer { planIndex in
            generationIndex.withUnsafeMutableBufferPointer { generationIndex in
                for step in 0..<count {
                    let new = waveStart[Int(wave[step])]
                    waveStart[Int(wave[step])] += 1
                    planIndex[step] = Int32(new)
                    generationIndex[new] = Int32(step)
                }
            }
        }

        // A step's dependencies are its chain predecessor, then the declared ones (every edge into
        // the step); most steps have the chain predecessor alone, which a step keeps without an
        // array. A manager's steps are consecutive in generation order, and a chain, so each
        // manager's pending versions are gathered in the same pass.
        let names = graph.managers.map { inline($0.name) }
        var pending = [[Version]](repeating: [], count: graph.managers.count)
        // No steps, no initializer: given no capacity, it writes the count into the storage every
        // empty array shares, which ThreadSanitizer reports as a race with any thread reading one.
        let plannedSteps = count == 0 ? [] : [PlannedStep](unsafeUninitializedCapacity: count) { buffer, initializedCount in
            var edge = 0
            var runStart = 0
            while runStart < count {
                let manager = Int(steps.managers[runStart])
                let name = names[manager]
                let versions = graph.managers[manager].versions
                // Empty when none of the manager's migrations has a name.
                let stepNames = inputs[manager].names
                // The previous step of the run: the chain predecessor, kept as its action and
                // version rather than an optional identifier, which copies and releases the name.
                var previousAction = PlannedStep.Action.migrate, previousVersion: Version?
                // The manager's migrations: usually consecutive positions, copied in one go.
                var firstMigration = 0, migrationCount = 0, consecutive = true
                var step = runStart
                repeat {
                    let kind = steps.step(step)
                    let (action, version) = kind.plannedAction
                    var stepName: String?
                    if let migration = kind.migration {
                        if migrationCount == 0 { firstMigration = migration.position }
                        consecutive = consecutive && migration.position == firstMigration + migrationCount
                        migrationCount += 1
                        if !stepNames.isEmpty { stepName = stepNames[migration.position] }
                    } else if case .squash(let squash) = kind {
                        // Pending are the migrations the squash records.
                        if migrationCount == 0 { firstMigration = squash.recorded.lowerBound }
                        consecutive = consecutive && squash.recorded.lowerBound == firstMigration + migrationCount
                        migrationCount += squash.recorded.count
                        stepName = inputs[manager].squashes[squash.index].name
                    }
                    let previousAppVersion = action == .appVersionChange ? starts[manager].recordedAppVersion : nil
                    let plannedStep: PlannedStep
                    if previousAppVersion == nil, stepName == nil, edge == declared.to.count || declared.to[edge] != step {
                        plannedStep = PlannedStep(
                            manager: name, action: action, version: version,
                            chain: step > runStart ? (previousAction, previousVersion) : nil, wave: Int(wave[step]))
                    } else {
                        var declaredEnd = edge
                        while declaredEnd < declared.to.count, declared.to[declaredEnd] == step { declaredEnd += 1 }
                        var dependencies: [PlannedStep.ID] = []
                        dependencies.reserveCapacity((step > runStart ? 1 : 0) + declaredEnd - edge)
                        if step > runStart {
                            dependencies.append(PlannedStep.ID(manager: name, action: previousAction, version: previousVersion))
                        }
                        while edge < declaredEnd {
                            let predecessor = declared.from[edge]
                            let (action, version) = steps.step(predecessor).plannedAction
                            dependencies.append(PlannedStep.ID(
                                manager: names[Int(steps.managers[predecessor])], action: action, version: version))
                            edge += 1
                        }
                        plannedStep = PlannedStep(
                            manager: name, action: action, version: version, previousAppVersion: previousAppVersion,
                            dependencies: dependencies, wave: Int(wave[step]), name: stepName)
                    }
                    (buffer.baseAddress! + Int(planIndex[step])).initialize(to: plannedStep)
                    previousAction = action
                    previousVersion = version
                    step += 1
                } while step < count && Int(steps.managers[step]) == manager
                if consecutive {
                    pending[manager] = Array(versions[firstMigration..<firstMigration + migrationCount])
                } else {
                    pending[manager] = (runStart..<step).flatMap { steps.step($0).recordedPositions.map { versions[$0] } ?? [] }
                }
                runStart = step
            }
            initializedCount = count
        }

        let managerPlans = graph.managers.enumerated().map { index, manager in
            let record = inputs[index].record
            return MigrationPlan.Manager(
                name: manager.name, store: inputs[index].store, createsStore: inputs[index].storeIsMissing, level: record.level,
                firstLaunch: starts[index].firstLaunch, newerStore: starts[index].newerStore,
                pending: pending[index],
                late: starts[index].late.map { manager.versions[$0] },
                lateNames: lateNames(starts[index].late, of: manager, inputs[index]), latePolicy: inputs[index].latePolicy,
                ahead: Array(manager.versions[graph.aheadStart[index]...]),
                inProgress: record.inProgress.filter { progress in pending[index].contains(progress.version) },
                changedFingerprints: changedFingerprints(of: manager, inputs[index]),
                fingerprintPolicy: inputs[index].fingerprintPolicy)
        }
        let plan = MigrationPlan(appVersion: graph.appVersion, managers: managerPlans, steps: plannedSteps, diagnostics: diagnostics)
        return ExecutablePlan(
            plan: plan,
            stepManagers: StepNumbers(values: steps.managers, generationIndex: generationIndex),
            generatedSteps: steps.steps,
            storeCount: inputs.reduce(0) { max($0, $1.storeIndex + 1) },
            records: inputs.map(\.record),
            storeOfManager: inputs.map(\.storeIndex),
            planIndex: planIndex, declaredFrom: steps.edgeFrom, declaredTo: steps.edgeTo)
    }
}

extension Step {
    /// The step as the public plan names it: its action and the version it records (none for a
    /// reset).
    fileprivate var plannedAction: (PlannedStep.Action, Version?) {
        switch self {
        case .migrate(let migration), .batches(let migration): return (.migrate, migration.version)
        case .baseline(let version): return (.baseline, version)
        case .reset: return (.reset, nil)
        case .appVersionChange(let version): return (.appVersionChange, version)
        case .squash(let squash): return (.squash, squash.version)
        }
    }
}
