/// A plan with what the scheduler needs to carry it out.
struct ExecutablePlan: Sendable {
    let plan: MigrationPlan
    let graph: StepGraph
    /// Each step's manager, and for a migration its position in the manager's sorted versions
    /// (-1 for other steps), in plan order.
    let stepManagers: [Int]
    let stepPositions: [Int]
    let managers: [ManagerDefinition]
    /// Each manager's recorded state when planned.
    let states: [ManagerState]
}

/// Turns a validated graph and the managers' recorded levels into the pending steps, their
/// dependencies and their order. O(V + E).
enum MigrationPlanner {
    /// How one manager's work begins, decided from its level and policies.
    private struct Start {
        var effectiveLevel: Version?
        var firstLaunch: FirstLaunchDecision?
        var newerStore: NewerStorePolicy?
        /// The level a first-launch baseline records.
        var baseline: Version?
        var firstPending: Int
        var pendingEnd: Int
        /// The app version the store records for the manager once any reset has run.
        var recordedAppVersion: Version?

        /// The level the manager's dependents can count on once its reset or baseline has run.
        var levelForDependents: Version? { newerStore == .reset ? nil : baseline ?? effectiveLevel }
    }

    static func plan(_ graph: MigrationGraph, states: [ManagerState]) throws -> ExecutablePlan {
        let managers = graph.managers
        let appVersion = graph.appVersion
        try rejectResetsOfSharedStores(managers)
        var starts: [Start] = []
        starts.reserveCapacity(managers.count)
        for (index, manager) in managers.enumerated() {
            starts.append(try start(of: manager, state: states[index], aheadStart: graph.aheadStart[index], appVersion: appVersion))
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
            for position in start.firstPending..<start.pendingEnd {
                stepOfNode[graph.firstNode[index] + position] = addStep(index, .migrate, manager.versions[position], position: position)
            }
            if manager.hook != nil, start.newerStore != .ignore, start.recordedAppVersion != appVersion {
                _ = addStep(index, .appVersionChange, appVersion)
            }
        }

        var diagnostics: [MigrationPlan.Diagnostic] = []
        for (index, manager) in managers.enumerated() {
            let appliedEnd = states[index].level.map { level in MigrationGraph.partition(manager.versions) { $0 > level } } ?? 0
            for position in 0..<min(max(appliedEnd, starts[index].pendingEnd), graph.aheadStart[index]) {
                let node = graph.firstNode[index] + position
                let step = stepOfNode[node]
                var blockers: [Int] = []
                for target in graph.dependencies(of: node) {
                    let targetManager = graph.managerOfNode[target]
                    let targetVersion = managers[targetManager].versions[target - graph.firstNode[targetManager]]
                    if step >= 0 {
                        // An edge already implied by the chain, or declared twice, is listed once.
                        guard let blocker = blockingStep(targetManager, targetVersion, target),
                              !(steps.hasChainPredecessor(step) && blocker == step - 1), !blockers.contains(blocker)
                        else { continue }
                        blockers.append(blocker)
                        steps.addEdge(from: blocker, to: step)
                    } else if position < appliedEnd, !(starts[targetManager].levelForDependents.map { $0 >= targetVersion } ?? false) {
                        diagnostics.append(.init(
                            migration: graph.reference(of: node), dependency: graph.reference(of: target),
                            dependencyLevel: starts[targetManager].levelForDependents))
                    }
                }
            }
        }

        func blockingStep(_ manager: Int, _ version: Version, _ node: Int) -> Int? {
            if baselineStep[manager] >= 0, let baseline = starts[manager].baseline, version <= baseline {
                return baselineStep[manager]
            }
            if let level = starts[manager].effectiveLevel, version <= level { return nil }
            if starts[manager].newerStore == .ignore { return nil }
            return stepOfNode[node] >= 0 ? stepOfNode[node] : nil
        }

        return order(graph: graph, states: states, starts: starts, steps: steps, diagnostics: diagnostics)
    }

    /// A reset throws away the whole store: refused when the store also holds other managers,
    /// whose levels would then describe data that is gone.
    private static func rejectResetsOfSharedStores(_ managers: [ManagerDefinition]) throws {
        for manager in managers where manager.newerStorePolicy == .reset {
            let others = managers.filter { $0.storeID == manager.storeID && $0 !== manager }.map(\.name)
            if !others.isEmpty {
                throw MigrationError.resetOfSharedStore(manager: manager.name, store: manager.storeDescription, otherManagers: others)
            }
        }
    }

    private static func start(of manager: ManagerDefinition, state: ManagerState, aheadStart: Int, appVersion: Version) throws -> Start {
        var start = Start(effectiveLevel: state.level, firstPending: 0, pendingEnd: aheadStart, recordedAppVersion: state.appVersion)
        if let level = state.level, level.base > appVersion {
            switch manager.newerStorePolicy {
            case .fail:
                throw MigrationError.storeIsNewer(manager: manager.name, store: manager.storeDescription, level: level, appVersion: appVersion)
            case .ignore:
                start.newerStore = .ignore
                start.pendingEnd = 0
                return start
            case .reset:
                guard manager.isRebuildable else {
                    throw MigrationError.resetNotSupported(manager: manager.name, store: manager.storeDescription)
                }
                start.newerStore = .reset
                start.effectiveLevel = nil
                start.recordedAppVersion = nil
                return start
            }
        }
        if state.level == nil {
            let decision = try manager.decideFirstLaunch()
            start.firstLaunch = decision
            if decision == .baseline {
                let highest = aheadStart > 0 ? manager.versions[aheadStart - 1] : appVersion
                start.baseline = max(highest, appVersion)
                start.effectiveLevel = start.baseline
                start.pendingEnd = 0
            }
            return start
        }
        if let level = start.effectiveLevel {
            start.firstPending = min(MigrationGraph.partition(manager.versions) { $0 > level }, aheadStart)
        }
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

        /// Predecessors or successors of every step, compressed into one array.
        func adjacency(predecessors: Bool) -> (start: [Int], list: [Int]) {
            var start = [Int](repeating: 0, count: count + 1)
            for step in 0..<count where hasChainPredecessor(step) { start[(predecessors ? step : step - 1) + 1] += 1 }
            for edge in edgeTo.indices { start[(predecessors ? edgeTo[edge] : edgeFrom[edge]) + 1] += 1 }
            for step in 0..<count { start[step + 1] += start[step] }
            var fill = start
            var list = [Int](repeating: 0, count: start[count])
            for step in 0..<count where hasChainPredecessor(step) {
                let (slot, value) = predecessors ? (step, step - 1) : (step - 1, step)
                list[fill[slot]] = value
                fill[slot] += 1
            }
            for edge in edgeTo.indices {
                let (slot, value) = predecessors ? (edgeTo[edge], edgeFrom[edge]) : (edgeFrom[edge], edgeTo[edge])
                list[fill[slot]] = value
                fill[slot] += 1
            }
            return (start, list)
        }
    }

    /// Computes waves with Kahn's algorithm, then orders steps by wave and, within a wave, by
    /// manager registration order: a counting sort, since a manager has at most one step a wave.
    private static func order(
        graph: MigrationGraph, states: [ManagerState], starts: [Start], steps: GeneratedSteps,
        diagnostics: [MigrationPlan.Diagnostic]
    ) -> ExecutablePlan {
        let count = steps.count
        let (predecessorStart, predecessorList) = steps.adjacency(predecessors: true)
        let (successorStart, successorList) = steps.adjacency(predecessors: false)
        var remaining = (0..<count).map { predecessorStart[$0 + 1] - predecessorStart[$0] }
        var wave = [Int](repeating: 0, count: count)
        var queue = (0..<count).filter { remaining[$0] == 0 }
        queue.reserveCapacity(count)
        var head = 0
        while head < queue.count {
            let step = queue[head]
            head += 1
            for successor in successorList[successorStart[step]..<successorStart[step + 1]] {
                wave[successor] = max(wave[successor], wave[step] + 1)
                remaining[successor] -= 1
                if remaining[successor] == 0 { queue.append(successor) }
            }
        }

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

        var storeIndex: [ObjectIdentifier: Int] = [:]
        let managerStores = graph.managers.map { manager in
            if let index = storeIndex[manager.storeID] { return index }
            storeIndex[manager.storeID] = storeIndex.count
            return storeIndex.count - 1
        }

        var plannedSteps: [PlannedStep] = []
        plannedSteps.reserveCapacity(count)
        var stores: [Int] = [], predecessorCounts: [Int] = [], stepManagers: [Int] = [], stepPositions: [Int] = []
        var newSuccessorStart = [0], newSuccessorList: [Int] = []
        stores.reserveCapacity(count)
        predecessorCounts.reserveCapacity(count)
        newSuccessorStart.reserveCapacity(count + 1)
        newSuccessorList.reserveCapacity(successorList.count)
        for old in oldIndex {
            let id = steps.ids[old]
            let manager = steps.managers[old]
            let predecessors = predecessorList[predecessorStart[old]..<predecessorStart[old + 1]]
            plannedSteps.append(PlannedStep(
                manager: id.manager, action: id.action, version: id.version,
                previousAppVersion: id.action == .appVersionChange ? starts[manager].recordedAppVersion : nil,
                dependencies: predecessors.map { steps.ids[$0] }, wave: wave[old]))
            stores.append(managerStores[manager])
            predecessorCounts.append(predecessors.count)
            stepManagers.append(manager)
            stepPositions.append(steps.positions[old])
            for successor in successorList[successorStart[old]..<successorStart[old + 1]] {
                newSuccessorList.append(newIndex[successor])
            }
            newSuccessorStart.append(newSuccessorList.count)
        }

        let managerPlans = graph.managers.enumerated().map { index, manager in
            MigrationPlan.Manager(
                name: manager.name, store: manager.storeDescription, level: states[index].level,
                firstLaunch: starts[index].firstLaunch, newerStore: starts[index].newerStore,
                pending: Array(manager.versions[starts[index].firstPending..<starts[index].pendingEnd]),
                ahead: Array(manager.versions[graph.aheadStart[index]...]))
        }
        let plan = MigrationPlan(appVersion: graph.appVersion, managers: managerPlans, steps: plannedSteps, diagnostics: diagnostics)
        let stepGraph = StepGraph(
            stores: stores, storeCount: storeIndex.count, predecessorCounts: predecessorCounts,
            successorStart: newSuccessorStart, successorList: newSuccessorList)
        return ExecutablePlan(
            plan: plan, graph: stepGraph, stepManagers: stepManagers, stepPositions: stepPositions,
            managers: graph.managers, states: states)
    }
}
