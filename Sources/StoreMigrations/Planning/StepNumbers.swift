/// An integer per step of a plan, kept in the order the planner made the steps (a manager's
/// steps one after the other) and read by plan index.
struct StepNumbers: Sendable {
    /// By generation index.
    let values: [Int32]
    /// The generation index of each step, by plan index.
    let generationIndex: [Int32]

    var count: Int { generationIndex.count }

    subscript(step: Int) -> Int { Int(values[Int(generationIndex[step])]) }

    /// The generation index of the step at plan index `step`.
    func generationIndex(of step: Int) -> Int { Int(generationIndex[step]) }
}
