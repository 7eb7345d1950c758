import Dispatch
import Foundation
import StoreMigrations

/// 100,000 no-op migrations over 1,000 in-memory stores: a version chain per store, and 10% of
/// migrations depending on one migration of a lower index in another store.
struct SchedulerWorkload {
    let stores: Int
    let perStore: Int
    let timer: Timer

    /// Node `store * perStore + position`; each extra edge points to a lower index, so the graph
    /// is acyclic.
    private func extraDependencies() -> [Int: Int] {
        var generator = SplitMix64(seed: 42)
        var edges: [Int: Int] = [:]
        for node in perStore..<(stores * perStore) where Int.random(in: 0..<10, using: &generator) == 0 {
            let store = node / perStore
            let targetStore = Int.random(in: 0..<store, using: &generator)
            edges[node] = targetStore * perStore + Int.random(in: 0..<perStore, using: &generator)
        }
        return edges
    }

    private func makeCoordinator(_ edges: [Int: Int]) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: Version(perStore))
        var managers: [MigrationManager<InMemoryStore<Int>>] = []
        for store in 0..<stores {
            managers.append(try coordinator.manager("store\(store)", store: InMemoryStore(0)))
        }
        for node in 0..<(stores * perStore) {
            let store = node / perStore, position = node % perStore
            let dependencies = edges[node].map { [managers[$0 / perStore].migration(Version($0 % perStore + 1))] } ?? []
            managers[store].register(Version(position + 1), dependsOn: dependencies) { _ in }
        }
        return coordinator
    }

    func run() throws -> [Measurement] {
        let edges = extraDependencies()
        let nodes = stores * perStore
        let name = "scheduler (\(nodes) steps, \(stores) stores)"

        var coordinator = try makeCoordinator(edges)
        // Planning and bare Dispatch take turns, so that the ratio compares runs made under the
        // same load; the plan finds all 100,000 steps pending (in-memory stores start empty).
        let plan = try coordinator.plan()
        precondition(plan.steps.count == nodes)
        let (planSamples, planBaselineSamples) = try timer.compare(
            library: { _ = try coordinator.plan() },
            baseline: { BareDispatchDAG(stores: stores, perStore: perStore, edges: edges).run() })

        var executeTimes: [Double] = []
        let (runSamples, runBaselineSamples) = try timer.compare(
            prepareLibrary: { coordinator = try makeCoordinator(edges) },
            library: {
                let report = try coordinator.run()
                precondition(report.steps.count == nodes)
                executeTimes.append(report.duration - report.planningDuration)
            },
            baseline: { BareDispatchDAG(stores: stores, perStore: perStore, edges: edges).run() })
        // The first run warms up, as in `Samples`.
        let timedExecutes = (executeTimes.count > 1 ? Array(executeTimes.dropFirst()) : executeTimes).sorted()
        let executeTime = timedExecutes[timedExecutes.count / 2]
        return [
            Measurement(workload: name, metric: "graph build + validate + plan", runs: timer.runs, libraryMedian: planSamples.median,
                        baselineMedian: nil, target: "< 0.25 s"),
            Measurement(workload: name, metric: "graph build + validate + plan vs bare Dispatch executing the steps", runs: timer.runs,
                        libraryMedian: planSamples.median, baselineMedian: planBaselineSamples.median, target: "≤ 0.5× bare Dispatch"),
            Measurement(workload: name, metric: "execute (run minus its planning)", runs: timer.runs, libraryMedian: executeTime,
                        baselineMedian: runBaselineSamples.median, target: "≤ 2× bare Dispatch"),
            Measurement(workload: name, metric: "run (plan + execute)", runs: timer.runs, libraryMedian: runSamples.median,
                        baselineMedian: runBaselineSamples.median, target: "-"),
        ]
    }
}

/// The same DAG on bare Dispatch: predecessor counters under a lock and a concurrent queue.
final class BareDispatchDAG: @unchecked Sendable {
    private let successors: [[Int]]
    private var remaining: [Int]
    private let lock = NSLock()
    private let queue = DispatchQueue(label: "baseline", attributes: .concurrent)
    private let group = DispatchGroup()

    init(stores: Int, perStore: Int, edges: [Int: Int]) {
        var successors = [[Int]](repeating: [], count: stores * perStore)
        var remaining = [Int](repeating: 0, count: stores * perStore)
        for node in 0..<(stores * perStore) {
            if node % perStore > 0 {
                successors[node - 1].append(node)
                remaining[node] += 1
            }
            if let target = edges[node] {
                successors[target].append(node)
                remaining[node] += 1
            }
        }
        self.successors = successors
        self.remaining = remaining
    }

    func run() {
        for node in remaining.indices where remaining[node] == 0 { submit(node) }
        group.wait()
    }

    private func submit(_ node: Int) {
        group.enter()
        queue.async {
            var ready: [Int] = []
            self.lock.lock()
            for successor in self.successors[node] {
                self.remaining[successor] -= 1
                if self.remaining[successor] == 0 { ready.append(successor) }
            }
            self.lock.unlock()
            for successor in ready { self.submit(successor) }
            self.group.leave()
        }
    }
}
