/// The steps of a plan as the planner keeps them: each step's kind and one number, 5 bytes
/// where a ``Step`` takes 48. A plan of 100,000 steps makes, orders and frees every one of them,
/// and its time goes as much to the memory as to the work. ``subscript(_:manager:)`` gives each
/// back as a ``Step``.
struct StepList: Sendable {
    private var kinds: [Step.Kind] = []
    /// By step: a migration's position among its manager's versions, or the index in
    /// `otherVersions` of the version a baseline, reset or hook is for, or in `squashes`.
    private var numbers: [Int32] = []
    private var otherVersions: [Version] = []
    /// The squashed migrations' steps, where a squash's number points.
    private var squashes: [Step.Squash] = []
    /// Each manager's versions, ascending, where a migration's position points.
    private let managerVersions: [[Version]]

    init(managerVersions: [[Version]]) {
        self.managerVersions = managerVersions
    }

    var count: Int { kinds.count }

    /// An empty list for the same managers.
    var withoutSteps: StepList { StepList(managerVersions: managerVersions) }

    mutating func reserveCapacity(_ capacity: Int) {
        kinds.reserveCapacity(capacity)
        numbers.reserveCapacity(capacity)
    }

    @inline(__always)
    mutating func append(_ step: Step) {
        kinds.append(step.kind)
        switch step {
        case .migrate(let migration), .batches(let migration):
            numbers.append(Int32(migration.position))
        case .baseline(let version), .reset(let version), .appVersionChange(let version):
            numbers.append(Int32(otherVersions.count))
            otherVersions.append(version)
        case .squash(let squash):
            numbers.append(Int32(squashes.count))
            squashes.append(squash)
        }
    }

    /// The kind of step `index`, without making the step.
    func kind(_ index: Int) -> Step.Kind { kinds[index] }

    /// Step `index`, of manager `manager`.
    @inline(__always)
    subscript(index: Int, manager manager: Int) -> Step {
        let number = Int(numbers[index])
        switch kinds[index] {
        case .migrate: return .migrate(Step.Migration(position: number, version: managerVersions[manager][number]))
        case .batches: return .batches(Step.Migration(position: number, version: managerVersions[manager][number]))
        case .baseline: return .baseline(otherVersions[number])
        case .reset: return .reset(newerThan: otherVersions[number])
        case .appVersionChange: return .appVersionChange(to: otherVersions[number])
        case .squash: return .squash(squashes[number])
        }
    }
}
