/// A plan with what running it needs, in plan order: each step (``Step``) and its manager, its
/// store, and the edges between steps (chain and declared).
///
/// Only what every step of a run reads is kept: the steps and their managers, as the planner
/// made them (in generation order) with the plan order over them. Stores and edges,
/// which a run reads once, are derived when a run asks for them, so that `plan()`, which needs
/// neither, does not make them.
struct ExecutablePlan: Sendable {
    var plan: MigrationPlan
    /// By plan index, whether a launch leaves the step for the background; empty when none is
    /// (see ``Deferral``).
    var stepDeferred: [Bool] = []
    /// Each step's manager, by plan index.
    let stepManagers: StepNumbers
    /// The steps in generation order; ``step(at:)`` reads them by plan index.
    let generatedSteps: StepList
    let storeCount: Int
    /// Each manager's record when planned.
    let records: [MigrationRecord]
    /// Each manager's store index.
    let storeOfManager: [Int]
    /// The plan index of each step by generation index.
    let planIndex: [Int32]
    /// The edges other than the chain, as generation indices, in the order they were found.
    let declaredFrom: [Int]
    let declaredTo: [Int]

    /// The step at plan index `index`.
    func step(at index: Int) -> Step { generatedSteps[stepManagers.generationIndex(of: index), manager: stepManagers[index]] }

    /// Each step's store, by plan index.
    var stepStores: [Int] {
        (0..<stepManagers.count).map { storeOfManager[stepManagers[$0]] }
    }

    /// With ``edgeTo``, every edge as plan indices: step `edgeTo[i]` waits for step `edgeFrom[i]`.
    /// The chain's edges come first, in generation order, then the declared ones.
    var edgeFrom: [Int] { edges(to: false) }
    var edgeTo: [Int] { edges(to: true) }

    private func edges(to: Bool) -> [Int] {
        let managers = stepManagers.values
        var ends: [Int] = []
        ends.reserveCapacity(managers.count + declaredFrom.count)
        for step in managers.indices.dropFirst() where managers[step - 1] == managers[step] {
            ends.append(Int(planIndex[to ? step : step - 1]))
        }
        for edge in declaredFrom.indices {
            ends.append(Int(planIndex[to ? declaredTo[edge] : declaredFrom[edge]]))
        }
        return ends
    }
}
