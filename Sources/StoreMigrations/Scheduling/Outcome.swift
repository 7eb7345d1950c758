/// How one step of a run ended: the one vocabulary the step executor, the scheduler, the events
/// and the report share, whatever the kind of step.
package enum Outcome: Sendable {
    /// The step did its work and committed its record; `level` is the manager's level in that
    /// record, which the report gives as the level after the run.
    case applied(level: Version?)
    /// Read again under the store's lock, the record showed the work done (by another process or
    /// run), or the store past the app under a policy that ignores newer stores: nothing ran.
    /// `level` is the manager's level as that record gave it.
    case alreadyApplied(level: Version?)
    /// The step stopped without failing and left its work to a later run.
    case stoppedShort(StopReason)
    /// The step threw; nothing of its transaction was committed.
    case failed(any Error)
    /// The step did not run: step `because` of the plan, which it waits for, failed or stopped
    /// short.
    case skipped(because: Int)
    /// The step did not run, or stopped between two batches, because the run was cancelled or
    /// stopped at a failure.
    case cancelled

    /// Why a step stopped short.
    package enum StopReason: Sendable {
        /// A deferred migration, or one waiting for it, left to the background by a launch.
        case deferred
        /// A resumable migration stopped between two batches (the launch's budget ran out), the
        /// progress of its committed batches recorded. Boxed: every step's outcome is copied
        /// as it ends, and few stop between batches.
        indirect case betweenBatches(StepProgress)
    }

    /// Whether the step ran and changed its record, whatever level it left.
    package var isApplied: Bool {
        if case .applied = self { return true }
        return false
    }
}

// Errors are not `Equatable`: two failures are equal when they read the same.
extension Outcome: Equatable {
    package static func == (lhs: Outcome, rhs: Outcome) -> Bool {
        switch (lhs, rhs) {
        case let (.applied(left), .applied(right)), let (.alreadyApplied(left), .alreadyApplied(right)): return left == right
        case let (.stoppedShort(left), .stoppedShort(right)): return left == right
        case let (.failed(left), .failed(right)): return "\(left)" == "\(right)"
        case let (.skipped(left), .skipped(right)): return left == right
        case (.cancelled, .cancelled): return true
        default: return false
        }
    }
}

extension Outcome.StopReason: Equatable {}
