/// Which pending steps wait for the deployment to say that no replica of the previous version
/// is serving any more: the migrations registered post-deploy (a contract step, such as dropping
/// a column the previous version still reads), and every step that depends on one, directly or
/// through its manager's chain. A dependent waits too rather than being refused: its migration
/// needs the post-deploy one's result, so it can only run once that has run, and holding it keeps
/// the next release's migrations of that manager behind the contract step, as their order says.
///
/// App-version hooks are never held: they run after the manager's other steps, and a hook run
/// at start-up records that this version has launched, whatever the post-deploy steps are doing.
///
/// A held ordinary migration of a later release than the post-deploy migration holding it (the
/// next release deployed before the previous one's post-deploy step ran) is another matter: the
/// release's code expects it applied. The planner lists it (``MigrationPlan/Manager/heldBehindPostDeploy``)
/// and a start-up run refuses to start.
enum PostDeploy {
    /// By step, the release (base version) of the earliest post-deploy migration holding it, or
    /// `nil` when it is not held; O(steps + edges). `postDeployRelease(step)` gives the release of
    /// a step that runs a migration registered post-deploy (`nil` for any other step), `isHook(step)`
    /// whether it is an app-version hook.
    static func held(
        count: Int, edges: (from: [Int], to: [Int]), postDeployRelease: (Int) -> Version?, isHook: (Int) -> Bool
    ) -> [Version?] {
        var holder = [Version?](repeating: nil, count: count)
        // Earliest release first: a step is marked once, by the earliest post-deploy migration
        // reaching it.
        let roots = (0..<count).compactMap { step in postDeployRelease(step).map { (step, $0) } }.sorted { $0.1 < $1.1 }
        guard !roots.isEmpty else { return holder }
        let graph = TopologicalOrder(count: count, from: edges.from, to: edges.to)
        for (root, release) in roots {
            var stack = [root]
            while let step = stack.popLast() {
                guard holder[step] == nil, !isHook(step) else { continue }
                holder[step] = release
                stack.append(contentsOf: graph.successors(of: step))
            }
        }
        return holder
    }
}

extension MigrationPlanner {
    /// `full`, the plan of every pending step, with the steps ``PostDeploy/held(count:edges:postDeployRelease:isHook:)``
    /// holds left out and listed apart unless `postDeploy` (the run that runs them), and the plan
    /// told which migrations wait and which of them a start-up must refuse to leave behind
    /// (``MigrationPlan/Manager/heldBehindPostDeploy``).
    static func holdingPostDeploy(
        _ full: ExecutablePlan, steps: GeneratedSteps, graph: MigrationGraph, inputs: [PlanningInput], starts: [Start],
        diagnostics: [MigrationPlan.Diagnostic], postDeploy: Bool
    ) -> ExecutablePlan {
        guard inputs.contains(where: { !$0.postDeploy.isEmpty }) else { return full }
        let managers = graph.managers
        let holder = PostDeploy.held(
            count: steps.count, edges: steps.allEdges(),
            postDeployRelease: { step in
                // A squash replacing a post-deploy migration is held as that migration would be.
                let manager = Int(steps.managers[step])
                guard let positions = steps.step(step).recordedPositions,
                      let position = inputs[manager].postDeploy.first(where: positions.contains)
                else { return nil }
                return managers[manager].versions[position].base
            },
            isHook: { steps.steps.kind($0) == .appVersionChange })
        let held = holder.map { $0 != nil }
        guard held.contains(true) else { return full }
        var versions = [[Version]](repeating: [], count: managers.count)
        var ordinary = [[Version]](repeating: [], count: managers.count)
        // A held step is a migration: hooks are never held, and resets and baselines come first.
        for step in 0..<steps.count {
            guard let release = holder[step], let positions = steps.step(step).recordedPositions else { continue }
            let manager = Int(steps.managers[step])
            for position in positions {
                let version = managers[manager].versions[position]
                versions[manager].append(version)
                if !postDeploy, !inputs[manager].postDeploy.contains(position), version.base > release {
                    ordinary[manager].append(version)
                }
            }
        }
        var executable = full
        var heldSteps: [PlannedStep] = []
        if !postDeploy {
            heldSteps = (0..<steps.count).filter { held[$0] }.map { Int(full.planIndex[$0]) }.sorted().map { full.plan.steps[$0] }
            executable = order(
                graph: graph, inputs: inputs, starts: starts, steps: steps.keeping(held.map { !$0 }), diagnostics: diagnostics)
        }
        executable.plan.setPostDeploy(versions, ordinary: ordinary, heldSteps: heldSteps, records: inputs.map(\.record))
        return executable
    }
}
