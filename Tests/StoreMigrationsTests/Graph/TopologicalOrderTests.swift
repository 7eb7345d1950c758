import Testing
@testable import StoreMigrations

/// The one Kahn's algorithm: what it releases, in which waves, and what a cycle keeps back.
@Suite struct TopologicalOrderTests {
    @Test func nodesAreReleasedOnlyOnceEveryPredecessorIsComplete() {
        // 0 → 2, 1 → 2, 2 → 3
        var order = TopologicalOrder(count: 4, from: [0, 1, 2], to: [2, 2, 3])
        #expect(order.initiallyReady == [0, 1])
        var released: [Int] = []
        order.complete(0) { released.append($0) }
        #expect(released == [])
        order.complete(1) { released.append($0) }
        #expect(released == [2])
        order.complete(2) { released.append($0) }
        #expect(released == [2, 3])
        #expect(Array(order.successors(of: 2)) == [3])
    }

    @Test func wavesAreTheLongestPathToEachNode() {
        // 0 → 1 → 3, 0 → 3, 2 alone
        var order = TopologicalOrder(count: 4, from: [0, 1, 0], to: [1, 3, 3])
        #expect(order.waves() == [0, 1, 0, 2])
    }

    @Test func nodesOnOrAfterACycleHaveNoWave() {
        // 0 → 1 → 2 → 1, 2 → 3
        var order = TopologicalOrder(count: 4, from: [0, 1, 2, 2], to: [1, 2, 1, 3])
        #expect(order.waves() == [0, nil, nil, nil])
    }

    @Test func aDeepChainNeedsNoRecursion() {
        let count = 200_000
        var order = TopologicalOrder(count: count, from: Array(0..<count - 1), to: Array(1..<count))
        #expect(order.waves().last == count - 1)
    }
}
