/// What the planner knows of one manager besides its place in the graph: its record and
/// policies, already read and decided. The planner does no I/O.
struct PlanningInput: Sendable {
    /// How reports name the manager's store.
    let store: String
    /// The index of the manager's store among the distinct stores (by identity).
    let storeIndex: Int
    let isRebuildable: Bool
    let record: MigrationRecord
    let newerStorePolicy: NewerStorePolicy
    let latePolicy: LateMigrationPolicy
    /// The first-launch policy's decision, when the record has no level.
    let firstLaunch: FirstLaunchDecision?
    let hasHook: Bool
}

/// A plan with what running it needs, in plan order: each step's manager, its position among the
/// manager's versions (-1 for steps that are not migrations), its store, and the edges between
/// steps (chain and declared).
struct ExecutablePlan: Sendable {
    let plan: MigrationPlan
    let stepManagers: [Int]
    let stepPositions: [Int]
    let stepStores: [Int]
    let storeCount: Int
    let edgeFrom: [Int]
    let edgeTo: [Int]
    /// Each manager's record when planned.
    let records: [MigrationRecord]
}

/// Turns a validated graph and the managers' records into the pending steps, their dependencies
/// and their order. O(V + E).
enum MigrationPlanner {
    /// How one manager's work begins, decided from its record and policies.
    private struct Start {
        var firstLaunch: FirstLaunchDecision?
        var newerStore: NewerStorePolicy?
        /// The baseline mark a first-launch baseline records.
        var baseline: Version?
        /// Positions of the migrations that run, ascending.
        var pending: [Int] = []
        /// Positions of late migrations: below the level, never applied.
        var late: [Int] = []
        /// The app version the store records for the manager once any reset has run.
        var recordedAppVersion: Version?
    }

    /// - Parameter targets: When given, only these migrations and the steps they depend on.
    static func plan(_ graph: MigrationGraph, inputs: [PlanningInput], targets: [MigrationReference]? = nil) throws -> ExecutablePlan {
        let managers = graph.managers
        let appVersion = graph.appVersion
        try rejectResetsOfSharedStores(graph, inputs)
        var starts: [Start] = []
        starts.reserveCapacity(managers.count)
        for index in managers.indices {
            starts.append(try start(of: managers[index], inputs[index], aheadStart: graph.aheadStart[index], appVersion: appVersion))
        }

        // Steps in generation order: manager by manager, each in chain order.
        var steps = GeneratedSteps()
        steps.reserveCapacity(starts.reduce(0) { $0 + $1.pending.count } + 2 * managers.count)
        var stepOfNode = [Int](repeating: -1, count: graph.nodeCount)
        var baselineStep = [Int](repeating: -1, count: managers.count)
        for index in managers.indices {
            let start = starts[index]
            if start.newerStore == .reset { _ = steps.append(manager: index, action: .reset) }
            if let baseline = start.baseline { baselineStep[index] = steps.append(manager: index, action: .baseline, version: baseline) }
            for position in start.pending {
                stepOfNode[graph.firstNode[index] + position] = steps.append(manager: index, action: .migrate, position: position)
            }
            if targets == nil, inputs[index].hasHook, start.newerStore != .ignore, start.newerStore != .fail,
               start.recordedAppVersion != appVersion {
                _ = steps.append(manager: index, action: .appVersionChange, version: appVersion)
            }
        }

        /// The step a dependent must wait for, or `nil` when the dependency is satisfied.
        func blockingStep(_ target: Int) -> Int? {
            let manager = graph.managerOfNode[target]
            if baselineStep[manager] >= 0, let baseline = starts[manager].baseline,
               managers[manager].versions[target - graph.firstNode[manager]] <= baseline {
                return baselineStep[manager]
            }
            return stepOfNode[target] >= 0 ? stepOfNode[target] : nil
        }

        /// Whether the migration at `target` counts as applied once the planned resets and
        /// baselines have run, for the diagnostics.
        func countsAsApplied(_ target: Int) -> Bool {
            let manager = graph.managerOfNode[target]
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
                let step = stepOfNode[node]
                if step >= 0 {
                    let firstEdge = steps.edgeTo.count
                    for target in graph.dependencies(of: node) {
                        // An edge already implied by the chain, or declared twice, is listed once
                        // (the step's edges so far are the last ones added).
                        guard let blocker = blockingStep(target),
                              !(steps.hasChainPredecessor(step) && blocker == step - 1),
                              !steps.edgeFrom[firstEdge...].contains(blocker)
                        else { continue }
                        steps.addEdge(from: blocker, to: step)
                    }
                } else if !graph.dependencies(of: node).isEmpty, starts[index].newerStore != .reset,
                          starts[index].baseline == nil, inputs[index].record.isApplied(managers[index].versions[position]) {
                    // Only a migration that declares dependencies can have one missing.
                    for target in graph.dependencies(of: node) where !countsAsApplied(target) {
                        let targetManager = graph.managerOfNode[target]
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
        return order(graph: graph, inputs: inputs, starts: starts, steps: steps, diagnostics: diagnostics)
    }

    /// The step of a targeted migration, or `nil` when it is applied already.
    private static func targetStep(_ target: MigrationReference, graph: MigrationGraph, stepOfNode: [Int]) throws -> Int? {
        guard let manager = graph.managers.firstIndex(where: { $0.name == target.manager }) else {
            throw MigrationError.unknownTarget(target)
        }
        let versions = graph.managers[manager].versions
        let position = MigrationGraph.partition(versions) { $0 >= target.version }
        guard position < versions.count, versions[position] == target.version else { throw MigrationError.unknownTarget(target) }
        guard position < graph.aheadStart[manager] else { throw MigrationError.targetAhead(target, appVersion: graph.appVersion) }
        let step = stepOfNode[graph.firstNode[manager] + position]
        return step >= 0 ? step : nil
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
                start.pending = Array(0..<aheadStart)
                return start
            }
        }
        guard let level = record.level else {
            let decision = input.firstLaunch ?? .runAll
            start.firstLaunch = decision
            if decision == .baseline {
                let highest = aheadStart > 0 ? manager.versions[aheadStart - 1] : appVersion
                start.baseline = max(highest, appVersion)
            } else {
                start.pending = Array(0..<aheadStart)
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
                    if next < applied.count, applied[next].version == versions[position] { continue }
                    start.late.append(position)
                }
            }
        }
        if input.latePolicy == .run { start.pending = start.late }
        start.pending += firstAbove..<aheadStart
        return start
    }

    /// Steps in generation order (manager by manager, each in chain order) and the dependency
    /// edges between them other than the chain, which is implicit: a step follows the previous
    /// one when both belong to the same manager.
    ///
    /// Steps are kept as integers, not identifiers (a name and versions to copy and release per
    /// step): a migration's version is its manager's version at its position, and the few other
    /// steps keep theirs aside. Identifiers are made once, for the plan.
    private struct GeneratedSteps {
        var managers: [Int] = []
        var actions: [PlannedStep.Action] = []
        /// Each step's position among its manager's versions; -1 for steps that are not migrations.
        var positions: [Int] = []
        /// The version of each step that is not a migration, by step (none for a reset).
        var otherVersions: [Int: Version] = [:]
        var edgeFrom: [Int] = []
        var edgeTo: [Int] = []

        var count: Int { managers.count }

        mutating func reserveCapacity(_ capacity: Int) {
            managers.reserveCapacity(capacity)
            actions.reserveCapacity(capacity)
            positions.reserveCapacity(capacity)
        }

        /// Adds a migration (`position`) or another step (`version`, if it records one).
        mutating func append(manager: Int, action: PlannedStep.Action, position: Int = -1, version: Version? = nil) -> Int {
            let step = managers.count
            managers.append(manager)
            actions.append(action)
            positions.append(position)
            if let version { otherVersions[step] = version }
            return step
        }

        func version(of step: Int, in graph: MigrationGraph) -> Version? {
            positions[step] >= 0 ? graph.managers[managers[step]].versions[positions[step]] : otherVersions[step]
        }

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

        /// Each step's predecessors other than its chain predecessor, compressed: step `s` waits
        /// for `list[start[s]..<start[s + 1]]`, in the order the edges were added.
        func declaredPredecessors() -> (start: [Int], list: [Int]) {
            var start = [Int](repeating: 0, count: count + 1)
            for step in edgeTo { start[step + 1] += 1 }
            for step in 0..<count { start[step + 1] += start[step] }
            var fill = start
            var list = [Int](repeating: 0, count: edgeTo.count)
            for edge in edgeTo.indices {
                list[fill[edgeTo[edge]]] = edgeFrom[edge]
                fill[edgeTo[edge]] += 1
            }
            return (start, list)
        }

        /// Each step's wave: the length of the longest chain of predecessors reaching it.
        ///
        /// When every declared predecessor was generated before its step (dependencies on
        /// managers created earlier, as apps usually declare them), generation order is a
        /// topological order, and one pass in that order finds every wave; otherwise Kahn's
        /// algorithm does. The graph is acyclic (validated), so every step has a wave.
        func waves(declared: (start: [Int], list: [Int])) -> [Int] {
            guard edgeFrom.indices.allSatisfy({ edgeFrom[$0] < edgeTo[$0] }) else {
                let (from, to) = allEdges()
                var topological = TopologicalOrder(count: count, from: from, to: to)
                return topological.waves().map { $0! }
            }
            var wave = [Int](repeating: 0, count: count)
            for step in 0..<count {
                var depth = hasChainPredecessor(step) ? wave[step - 1] + 1 : 0
                for index in declared.start[step]..<declared.start[step + 1] {
                    depth = max(depth, wave[declared.list[index]] + 1)
                }
                wave[step] = depth
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
            var newIndex = [Int](repeating: -1, count: count)
            var result = GeneratedSteps()
            for step in 0..<count where kept[step] {
                newIndex[step] = result.append(
                    manager: managers[step], action: actions[step], position: positions[step], version: otherVersions[step])
            }
            for edge in edgeFrom.indices where kept[edgeTo[edge]] {
                result.addEdge(from: newIndex[edgeFrom[edge]], to: newIndex[edgeTo[edge]])
            }
            return result
        }
    }

    /// Computes waves, then orders steps by wave and, within a wave, by manager registration
    /// order: a counting sort, since a manager has at most one step a wave.
    ///
    /// A plan of 100,000 steps is built in a few passes over flat arrays: each step's list of
    /// dependencies is the only allocation per step.
    private static func order(
        graph: MigrationGraph, inputs: [PlanningInput], starts: [Start], steps: GeneratedSteps,
        diagnostics: [MigrationPlan.Diagnostic]
    ) -> ExecutablePlan {
        let count = steps.count
        let declared = steps.declaredPredecessors()
        let wave = steps.waves(declared: declared)

        let waveCount = (wave.max() ?? -1) + 1
        var waveStart = [Int](repeating: 0, count: waveCount + 1)
        for step in 0..<count { waveStart[wave[step] + 1] += 1 }
        for index in 0..<waveCount { waveStart[index + 1] += waveStart[index] }
        var newIndex = [Int](repeating: 0, count: count)
        for step in 0..<count {
            newIndex[step] = waveStart[wave[step]]
            waveStart[wave[step]] += 1
        }

        var oldIndex = [Int](repeating: 0, count: count)
        for step in 0..<count { oldIndex[newIndex[step]] = step }

        // Each step's version, gathered in generation order (each manager's versions in turn):
        // plan order visits a step of every manager, wave after wave, and reading the managers'
        // own arrays in that order missed the cache at every step of a plan of 100,000.
        let names = graph.managers.map(\.name)
        let stepVersions = (0..<count).map { steps.version(of: $0, in: graph) }
        // Steps and their lists of dependencies are made in plan order, the order a run reads them.
        var plannedSteps: [PlannedStep] = []
        plannedSteps.reserveCapacity(count)
        var stepManagers: [Int] = [], stepPositions: [Int] = [], stepStores: [Int] = []
        stepManagers.reserveCapacity(count)
        stepPositions.reserveCapacity(count)
        stepStores.reserveCapacity(count)
        for old in oldIndex {
            let manager = steps.managers[old]
            let action = steps.actions[old]
            // The chain predecessor first, then the declared ones: every edge into the step.
            let hasChainPredecessor = steps.hasChainPredecessor(old)
            let declaredRange = declared.start[old]..<declared.start[old + 1]
            var dependencies: [PlannedStep.ID] = []
            dependencies.reserveCapacity((hasChainPredecessor ? 1 : 0) + declaredRange.count)
            if hasChainPredecessor {
                dependencies.append(PlannedStep.ID(manager: names[manager], action: steps.actions[old - 1], version: stepVersions[old - 1]))
            }
            for index in declaredRange {
                let predecessor = declared.list[index]
                dependencies.append(PlannedStep.ID(
                    manager: names[steps.managers[predecessor]], action: steps.actions[predecessor], version: stepVersions[predecessor]))
            }
            plannedSteps.append(PlannedStep(
                manager: names[manager], action: action, version: stepVersions[old],
                previousAppVersion: action == .appVersionChange ? starts[manager].recordedAppVersion : nil,
                dependencies: consume dependencies, wave: wave[old]))
            stepManagers.append(manager)
            stepPositions.append(steps.positions[old])
            stepStores.append(inputs[manager].storeIndex)
        }

        // The edges in plan order: the chain's, then the declared ones.
        var edgeFrom: [Int] = [], edgeTo: [Int] = []
        edgeFrom.reserveCapacity(count + steps.edgeFrom.count)
        edgeTo.reserveCapacity(count + steps.edgeFrom.count)
        for step in 0..<count where steps.hasChainPredecessor(step) {
            edgeFrom.append(newIndex[step - 1])
            edgeTo.append(newIndex[step])
        }
        for edge in steps.edgeFrom.indices {
            edgeFrom.append(newIndex[steps.edgeFrom[edge]])
            edgeTo.append(newIndex[steps.edgeTo[edge]])
        }

        // A manager's steps are consecutive in generation order, and a chain, so in the same
        // order in the plan.
        var pending = [[Version]](repeating: [], count: graph.managers.count)
        var runStart = 0
        while runStart < count {
            let manager = steps.managers[runStart]
            var runEnd = runStart + 1
            while runEnd < count, steps.managers[runEnd] == manager { runEnd += 1 }
            var versions: [Version] = []
            versions.reserveCapacity(runEnd - runStart)
            for step in runStart..<runEnd where steps.actions[step] == .migrate { versions.append(stepVersions[step]!) }
            pending[manager] += versions
            runStart = runEnd
        }

        let managerPlans = graph.managers.enumerated().map { index, manager in
            let record = inputs[index].record
            return MigrationPlan.Manager(
                name: manager.name, store: inputs[index].store, level: record.level,
                firstLaunch: starts[index].firstLaunch, newerStore: starts[index].newerStore,
                pending: pending[index],
                late: starts[index].late.map { manager.versions[$0] }, latePolicy: inputs[index].latePolicy,
                ahead: Array(manager.versions[graph.aheadStart[index]...]))
        }
        let plan = MigrationPlan(appVersion: graph.appVersion, managers: managerPlans, steps: plannedSteps, diagnostics: diagnostics)
        return ExecutablePlan(
            plan: plan, stepManagers: stepManagers, stepPositions: stepPositions, stepStores: stepStores,
            storeCount: inputs.reduce(0) { max($0, $1.storeIndex + 1) },
            edgeFrom: edgeFrom, edgeTo: edgeTo,
            records: inputs.map(\.record))
    }
}
