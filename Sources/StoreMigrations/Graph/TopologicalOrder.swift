/// Kahn's algorithm, written once: graph validation, the planner's waves and the scheduler all
/// release nodes through it. Nodes are `0..<count`; edges are kept compressed (one flat array of
/// successors and its offsets), so a graph of 100,000 nodes costs a few arrays, not one per node.
///
/// Validation and waves drain it at once (``waves()``); the scheduler calls ``complete(_:_:)`` as
/// steps finish on Dispatch.
struct TopologicalOrder: Sendable {
    /// Node `n` is waited for by `successorList[successorStart[n]..<successorStart[n + 1]]`.
    private let successorStart: [Int]
    private let successorList: [Int]
    /// How many predecessors of each node are not complete yet.
    private var remaining: [Int]

    var count: Int { remaining.count }

    /// A graph of `count` nodes with an edge from each `edges.from[i]` to `edges.to[i]`.
    init(count: Int, from: [Int], to: [Int]) {
        var start = [Int](repeating: 0, count: count + 1)
        var remaining = [Int](repeating: 0, count: count)
        for edge in from.indices {
            start[from[edge] + 1] += 1
            remaining[to[edge]] += 1
        }
        for node in 0..<count { start[node + 1] += start[node] }
        var fill = start
        var list = [Int](repeating: 0, count: from.count)
        for edge in from.indices {
            list[fill[from[edge]]] = to[edge]
            fill[from[edge]] += 1
        }
        self.successorStart = start
        self.successorList = list
        self.remaining = remaining
    }

    /// The nodes that wait for `node`.
    func successors(of node: Int) -> ArraySlice<Int> {
        successorList[successorStart[node]..<successorStart[node + 1]]
    }

    /// The nodes with no predecessors, ascending.
    var initiallyReady: [Int] { remaining.indices.filter { remaining[$0] == 0 } }

    /// Marks `node` complete and passes each successor it frees to `ready`.
    mutating func complete(_ node: Int, _ ready: (Int) -> Void) {
        for successor in successors(of: node) {
            remaining[successor] -= 1
            if remaining[successor] == 0 { ready(successor) }
        }
    }

    /// Each node's wave (the length of the longest path reaching it), or `nil` for the nodes a
    /// cycle keeps from ever being freed.
    mutating func waves() -> [Int?] {
        var wave = [Int?](repeating: nil, count: count)
        var queue = initiallyReady
        queue.reserveCapacity(count)
        var head = 0
        var depth = [Int](repeating: 0, count: count)
        while head < queue.count {
            let node = queue[head]
            head += 1
            let next = depth[node] + 1
            complete(node) { queue.append($0) }
            for successor in successors(of: node) where depth[successor] < next { depth[successor] = next }
        }
        for node in queue { wave[node] = depth[node] }
        return wave
    }
}
