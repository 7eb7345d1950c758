/// The steps of a run as the scheduler needs them: each step's store, and the order between
/// steps. Built by the run from the plan's arrays: the scheduler knows steps and stores by index,
/// not what they are.
struct StepGraph: Sendable {
    /// The index of each step's store among the run's distinct stores.
    let stores: [Int]
    let storeCount: Int
    /// The dependencies, released by Kahn's algorithm as steps finish.
    var order: TopologicalOrder

    var count: Int { stores.count }

    /// - Parameters:
    ///   - stores: Each step's store index, `0..<storeCount`.
    ///   - edgeFrom: With `edgeTo`, the edges: step `edgeTo[i]` waits for step `edgeFrom[i]`.
    init(stores: [Int], storeCount: Int, edgeFrom: [Int], edgeTo: [Int]) {
        self.stores = stores
        self.storeCount = storeCount
        self.order = TopologicalOrder(count: stores.count, from: edgeFrom, to: edgeTo)
    }
}
