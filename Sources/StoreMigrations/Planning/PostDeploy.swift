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
