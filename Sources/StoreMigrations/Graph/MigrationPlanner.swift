/// A plan with what the scheduler needs to carry it out.
struct ExecutablePlan: Sendable {
    struct Step: Sendable {
        let manager: Int
        /// The index of the step's store among the plan's distinct stores.
        let store: Int
        /// For a migration, its position in the manager's sorted versions.
        let position: Int?
        /// Indices (into the plan's steps) of the steps that wait for this one.
        var successors: [Int]
        var predecessorCount: Int
    }

    let plan: MigrationPlan
    let steps: [Step]
    let storeCount: Int
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
    }

    static func plan(_ graph: MigrationGraph, states: [ManagerState]) throws -> ExecutablePlan {
        let managers = graph.managers
        let appVersion = graph.appVersion
        var starts: [Start] = []
        starts.reserveCapacity(managers.count)
        for (index, manager) in managers.enumerated() {
            starts.append(try start(of: manager, state: states[index], aheadStart: graph.aheadStart[index], appVersion: appVersion))
        }

        // Steps in generation order: manager by manager, each in chain order.
        var ids: [PlannedStep.ID] = []
        var stepManager: [Int] = []
        var stepPosition: [Int?] = []
        var predecessors: [[Int]] = []
        var stepOfNode = [Int](repeating: -1, count: graph.nodeCount)
        var baselineStep = [Int](repeating: -1, count: managers.count)

        func addStep(_ manager: Int, _ action: PlannedStep.Action, _ version: Version?, position: Int? = nil) -> Int {
            let index = ids.count
            ids.append(.init(manager: managers[manager].name, action: action, version: version))
            stepManager.append(manager)
            stepPosition.append(position)
            var chain: [Int] = []
            if index > 0, stepManager[index - 1] == manager { chain.append(index - 1) }
            predecessors.append(chain)
            return index
        }

        for (index, manager) in managers.enumerated() {
            let start = starts[index]
            if start.newerStore == .reset { _ = addStep(index, .reset, nil) }
            if let baseline = start.baseline { baselineStep[index] = addStep(index, .baseline, baseline) }
            for position in start.firstPending..<start.pendingEnd {
                stepOfNode[graph.firstNode[index] + position] = addStep(index, .migrate, manager.versions[position], position: position)
            }
            if manager.hook != nil, start.newerStore != .ignore, states[index].appVersion != appVersion {
                _ = addStep(index, .appVersionChange, appVersion)
            }
        }

        var diagnostics: [MigrationPlan.Diagnostic] = []
        for (index, manager) in managers.enumerated() {
            let appliedEnd = states[index].level.map { level in MigrationGraph.partition(manager.versions) { $0 > level } } ?? 0
            for position in 0..<min(max(appliedEnd, starts[index].pendingEnd), graph.aheadStart[index]) {
                let node = graph.firstNode[index] + position
                for target in graph.dependencies(of: node) {
                    let targetManager = graph.managerOfNode[target]
                    let targetVersion = managers[targetManager].versions[target - graph.firstNode[targetManager]]
                    let step = stepOfNode[node]
                    if step >= 0 {
                        if let blocker = blockingStep(targetManager, targetVersion, target) { predecessors[step].append(blocker) }
                    } else if position < appliedEnd, !(states[targetManager].level.map { $0 >= targetVersion } ?? false) {
                        diagnostics.append(.init(
                            migration: graph.reference(of: node), dependency: graph.reference(of: target),
                            dependencyLevel: states[targetManager].level))
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

        return order(
            graph: graph, states: states, starts: starts, ids: ids, stepManager: stepManager,
            stepPosition: stepPosition, predecessors: predecessors, diagnostics: diagnostics)
    }

    private static func start(of manager: ManagerDefinition, state: ManagerState, aheadStart: Int, appVersion: Version) throws -> Start {
        var start = Start(effectiveLevel: state.level, firstPending: 0, pendingEnd: aheadStart)
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

    /// Computes waves with Kahn's algorithm, then orders steps by wave and, within a wave, by
    /// manager registration order: a counting sort, since a manager has at most one step a wave.
    private static func order(
        graph: MigrationGraph, states: [ManagerState], starts: [Start], ids: [PlannedStep.ID],
        stepManager: [Int], stepPosition: [Int?], predecessors: [[Int]], diagnostics: [MigrationPlan.Diagnostic]
    ) -> ExecutablePlan {
        let count = ids.count
        var successors = [[Int]](repeating: [], count: count)
        var remaining = [Int](repeating: 0, count: count)
        for step in 0..<count {
            remaining[step] = predecessors[step].count
            for predecessor in predecessors[step] { successors[predecessor].append(step) }
        }
        var wave = [Int](repeating: 0, count: count)
        var queue = (0..<count).filter { remaining[$0] == 0 }
        var head = 0
        while head < queue.count {
            let step = queue[head]
            head += 1
            for successor in successors[step] {
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
        for manager in graph.managers where storeIndex[manager.storeID] == nil {
            storeIndex[manager.storeID] = storeIndex.count
        }

        var plannedSteps: [PlannedStep] = []
        var steps: [ExecutablePlan.Step] = []
        plannedSteps.reserveCapacity(count)
        steps.reserveCapacity(count)
        for old in oldIndex {
            let id = ids[old]
            let manager = stepManager[old]
            plannedSteps.append(PlannedStep(
                manager: id.manager, action: id.action, version: id.version,
                previousAppVersion: id.action == .appVersionChange ? states[manager].appVersion : nil,
                dependencies: predecessors[old].map { ids[$0] }, wave: wave[old]))
            steps.append(.init(
                manager: manager, store: storeIndex[graph.managers[manager].storeID]!, position: stepPosition[old],
                successors: successors[old].map { newIndex[$0] }, predecessorCount: predecessors[old].count))
        }

        let managerPlans = graph.managers.enumerated().map { index, manager in
            MigrationPlan.Manager(
                name: manager.name, store: manager.storeDescription, level: states[index].level,
                firstLaunch: starts[index].firstLaunch, newerStore: starts[index].newerStore,
                pending: Array(manager.versions[starts[index].firstPending..<starts[index].pendingEnd]),
                ahead: Array(manager.versions[graph.aheadStart[index]...]))
        }
        let plan = MigrationPlan(appVersion: graph.appVersion, managers: managerPlans, steps: plannedSteps, diagnostics: diagnostics)
        return ExecutablePlan(plan: plan, steps: steps, storeCount: storeIndex.count, managers: graph.managers, states: states)
    }
}
