/// Which steps of a plan a launch leaves for the background: the migrations registered
/// deferred, and, by ``DependentsOfDeferredPolicy``, the steps that depend on them. Either way no
/// step that runs at launch depends on one that does not.
enum Deferral {
    /// Marks `executable`'s deferred steps; `registered[manager][position]` says whether a
    /// migration was registered deferred, and an empty `registered[manager]` that none of its
    /// migrations was. O(V + E).
    static func apply(to executable: inout ExecutablePlan, registered: [[Bool]], policy: DependentsOfDeferredPolicy) {
        let steps = executable.plan.steps.indices
        var deferred = steps.map { index in
            guard let migration = executable.step(at: index).migration else { return false }
            let manager = registered[executable.stepManagers[index]]
            return !manager.isEmpty && manager[migration.position]
        }
        guard deferred.contains(true) else { return }
        var predecessors = [[Int]](repeating: [], count: steps.count)
        for (from, to) in zip(executable.edgeFrom, executable.edgeTo) { predecessors[to].append(from) }
        // Plan order is topological: a step's predecessors are decided before it, and, walking
        // backwards, its successors before it.
        switch policy {
        case .wait:
            for index in steps where !deferred[index] {
                deferred[index] = predecessors[index].contains { deferred[$0] }
            }
        case .finishInline:
            for index in steps.reversed() where !deferred[index] {
                for predecessor in predecessors[index] { deferred[predecessor] = false }
            }
        }
        executable.stepDeferred = deferred
        var byManager = [[Version]](repeating: [], count: executable.plan.managers.count)
        for index in steps where deferred[index] {
            let manager = executable.stepManagers[index]
            let step = executable.step(at: index)
            if let migration = step.migration {
                byManager[manager].append(migration.version)
            } else if case .squash(let squash) = step {
                // A squash defers every migration it records, as the plan lists them pending.
                byManager[manager] += executable.plan.managers[manager].pending.filter(squash.range.contains)
            }
        }
        executable.plan.setDeferred(byManager)
    }
}
