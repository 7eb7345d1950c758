/// Which pending steps wait for the deployment to say that no replica of the previous version
/// is serving any more: the migrations registered post-deploy (a contract step, such as dropping
/// a column the previous version still reads), and every step that depends on one, directly or
/// through its manager's chain. A dependent waits too rather than being refused: its migration
/// needs the post-deploy one's result, so it can only run once that has run, and holding it keeps
/// the next release's migrations of that manager behind the contract step, as their order says.
///
/// App-version hooks are never held: they run after the manager's other steps, and a hook run
/// at start-up records that this version has launched, whatever the post-deploy steps are doing.
enum PostDeploy {
    /// By step, whether it is held; O(steps + edges). `isPostDeploy(step)` says whether the step
    /// runs a migration registered post-deploy, `isHook(step)` whether it is an app-version hook.
    static func held(
        count: Int, edges: (from: [Int], to: [Int]), isPostDeploy: (Int) -> Bool, isHook: (Int) -> Bool
    ) -> [Bool] {
        var held = [Bool](repeating: false, count: count)
        var stack = (0..<count).filter(isPostDeploy)
        guard !stack.isEmpty else { return held }
        let graph = TopologicalOrder(count: count, from: edges.from, to: edges.to)
        while let step = stack.popLast() {
            guard !held[step], !isHook(step) else { continue }
            held[step] = true
            stack.append(contentsOf: graph.successors(of: step))
        }
        return held
    }
}
