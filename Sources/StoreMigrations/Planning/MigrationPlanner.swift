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
        var stepOfNode = [Int](repeating: -1, count: graph.nodeCount)
        var baselineStep = [Int](repeating: -1, count: managers.count)
        func addStep(_ manager: Int, _ action: PlannedStep.Action, _ version: Version?, position: Int = -1) -> Int {
            steps.append(.init(manager: managers[manager].name, action: action, version: version), manager: manager, position: position)
        }
        for (index, manager) in managers.enumerated() {
            let start = starts[index]
            if start.newerStore == .reset { _ = addStep(index, .reset, nil) }
            if let baseline = start.baseline { baselineStep[index] = addStep(index, .baseline, baseline) }
            for position in start.pending {
                stepOfNode[graph.firstNode[index] + position] = addStep(index, .migrate, manager.versions[position], position: position)
            }
            if targets == nil, inputs[index].hasHook, start.newerStore != .ignore, start.newerStore != .fail,
               start.recordedAppVersion != appVersion {
                _ = addStep(index, .appVersionChange, appVersion)
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
                    var blockers: [Int] = []
                    for target in graph.dependencies(of: node) {
                        // An edge already implied by the chain, or declared twice, is listed once.
                        guard let blocker = blockingStep(target),
                              !(steps.hasChainPredecessor(step) && blocker == step - 1), !blockers.contains(blocker)
                        else { continue }
                        blockers.append(blocker)
                        steps.addEdge(from: blocker, to: step)
                    }
                } else if starts[index].newerStore != .reset, starts[index].baseline == nil,
                          inputs[index].record.isApplied(managers[index].versions[position]) {
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
        // every version is, so the common case reads no record entry.
        let firstAbove = min(MigrationGraph.partition(manager.versions) { $0 > level }, aheadStart)
        for position in 0..<firstAbove where !record.isApplied(manager.versions[position]) {
            start.late.append(position)
        }
        if input.latePolicy == .run { start.pending = start.late }
        start.pending += firstAbove..<aheadStart
        return start
    }

    /// Steps in generation order (manager by manager, each in chain order) and the dependency
    /// edges between them other than the chain, which is implicit: a step follows the previous
    /// one when both belong to the same manager.
    private struct GeneratedSteps {
        var ids: [PlannedStep.ID] = []
        var managers: [Int] = []
        var positions: [Int] = []
        var edgeFrom: [Int] = []
        var edgeTo: [Int] = []

        var count: Int { ids.count }

        mutating func append(_ id: PlannedStep.ID, manager: Int, position: Int) -> Int {
            ids.append(id)
            managers.append(manager)
            positions.append(position)
            return ids.count - 1
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
                newIndex[step] = result.append(ids[step], manager: managers[step], position: positions[step])
            }
            for edge in edgeFrom.indices where kept[edgeTo[edge]] {
                result.addEdge(from: newIndex[edgeFrom[edge]], to: newIndex[edgeTo[edge]])
            }
            return result
        }
    }

    /// Computes waves with Kahn's algorithm, then orders steps by wave and, within a wave, by
    /// manager registration order: a counting sort, since a manager has at most one step a wave.
    private static func order(
        graph: MigrationGraph, inputs: [PlanningInput], starts: [Start], steps: GeneratedSteps,
        diagnostics: [MigrationPlan.Diagnostic]
    ) -> ExecutablePlan {
        let count = steps.count
        let (from, to) = steps.allEdges()
        var topological = TopologicalOrder(count: count, from: from, to: to)
        // The graph is acyclic (validated), so every step has a wave.
        let wave = topological.waves().map { $0! }

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

        // Each step's predecessors, in plan order, for the plan's dependency lists.
        var predecessorStart = [Int](repeating: 0, count: count + 1)
        for edge in to.indices { predecessorStart[newIndex[to[edge]] + 1] += 1 }
        for step in 0..<count { predecessorStart[step + 1] += predecessorStart[step] }
        var fill = predecessorStart
        var predecessorList = [Int](repeating: 0, count: to.count)
        for edge in to.indices {
            let step = newIndex[to[edge]]
            predecessorList[fill[step]] = from[edge]
            fill[step] += 1
        }

        var plannedSteps: [PlannedStep] = []
        plannedSteps.reserveCapacity(count)
        var stepManagers: [Int] = [], stepPositions: [Int] = [], stepStores: [Int] = []
        stepManagers.reserveCapacity(count)
        stepPositions.reserveCapacity(count)
        stepStores.reserveCapacity(count)
        var pending = [[Version]](repeating: [], count: graph.managers.count)
        for (position, old) in oldIndex.enumerated() {
            let id = steps.ids[old]
            let manager = steps.managers[old]
            plannedSteps.append(PlannedStep(
                manager: id.manager, action: id.action, version: id.version,
                previousAppVersion: id.action == .appVersionChange ? starts[manager].recordedAppVersion : nil,
                dependencies: predecessorList[predecessorStart[position]..<predecessorStart[position + 1]].map { steps.ids[$0] },
                wave: wave[old]))
            stepManagers.append(manager)
            stepPositions.append(steps.positions[old])
            stepStores.append(inputs[manager].storeIndex)
            if id.action == .migrate, let version = id.version { pending[manager].append(version) }
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
            storeCount: (inputs.map(\.storeIndex).max() ?? -1) + 1,
            edgeFrom: to.indices.map { newIndex[from[$0]] }, edgeTo: to.map { newIndex[$0] },
            records: inputs.map(\.record))
    }
}
