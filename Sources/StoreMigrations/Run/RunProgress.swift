import Foundation

/// The `Progress` tree of one run: one unit per step, and a child of 1,000 units for each step
/// whose body asks for one.
///
/// Every change to the tree is made under one lock: swift-corelibs-foundation's `Progress` does
/// not synchronize adding children or propagating counts to a shared parent. Steps that never ask
/// for a child are added in strides of 0.1% of the run, since updating a `Progress` costs more
/// than a step that does nothing.
final class RunProgress: @unchecked Sendable {
    // @unchecked: `stepProgress` and `unreportedSteps` are only touched with `lock` held, and
    // `Progress` is thread-safe apart from the tree changes that lock serializes.
    let progress: Progress
    private let lock = NSLock()
    // Touched only with `lock` held, so accesses never overlap: Swift's dynamic exclusivity
    // check, one a step, is left out.
    @exclusivity(unchecked) private var stepProgress: [Progress?]
    @exclusivity(unchecked) private var unreportedSteps: Int64 = 0
    private let stride: Int64

    init(progress: Progress, stepCount: Int) {
        self.progress = progress
        self.stepProgress = Array(repeating: nil, count: stepCount)
        self.stride = Int64(max(1, stepCount / 1_000))
        // A run with nothing to do still has one unit, completed with its report, so that the
        // caller's progress completes on the most common launch.
        progress.totalUnitCount = Int64(max(1, stepCount))
    }

    /// The step's child, made on first use.
    func child(ofStep step: Int) -> Progress {
        lock.withLock { makeChild(ofStep: step) }
    }

    /// Advances the step's child; returns whether the step's whole percentage changed, so that
    /// observers hear of each percentage once however many times a body reports within it.
    @discardableResult
    func report(_ fraction: Double, ofStep step: Int) -> Bool {
        lock.withLock {
            let child = makeChild(ofStep: step)
            let before = child.completedUnitCount * 100 / MigrationContext.progressUnits
            child.completedUnitCount = MigrationContext.units(fraction)
            return child.completedUnitCount * 100 / MigrationContext.progressUnits != before
        }
    }

    /// Completes a step's unit, through its child when it has one.
    func finish(step: Int) {
        lock.withLock {
            if let child = stepProgress[step] {
                child.completedUnitCount = child.totalUnitCount
            } else {
                unreportedSteps += 1
                if unreportedSteps >= stride { flush() }
            }
        }
    }

    /// Completes the run's progress as far as its steps went (all of it for a run with no step).
    func finishRun() {
        lock.withLock {
            flush()
            if stepProgress.isEmpty { progress.completedUnitCount = progress.totalUnitCount }
        }
    }

    /// Call with `lock` held.
    private func makeChild(ofStep step: Int) -> Progress {
        if let existing = stepProgress[step] { return existing }
        let child = Progress(totalUnitCount: MigrationContext.progressUnits, parent: progress, pendingUnitCount: 1)
        stepProgress[step] = child
        return child
    }

    /// Call with `lock` held.
    private func flush() {
        guard unreportedSteps > 0 else { return }
        progress.completedUnitCount += unreportedSteps
        unreportedSteps = 0
    }
}
