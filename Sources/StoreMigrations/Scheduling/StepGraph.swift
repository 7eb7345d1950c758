/// The steps of a plan as the scheduler needs them: each step's store and how many steps it
/// waits for, and the steps waiting for it, in flat arrays (no array per step).
struct StepGraph: Sendable {
    /// The index of each step's store among the plan's distinct stores.
    let stores: [Int]
    let storeCount: Int
    let predecessorCounts: [Int]
    /// Step `s` is waited for by `successorList[successorStart[s]..<successorStart[s + 1]]`.
    let successorStart: [Int]
    let successorList: [Int]

    var count: Int { stores.count }

    func successors(of step: Int) -> ArraySlice<Int> {
        successorList[successorStart[step]..<successorStart[step + 1]]
    }
}
