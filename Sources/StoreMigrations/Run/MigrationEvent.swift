import Foundation

/// What an observer is told while a coordinator runs.
///
/// ```swift
/// coordinator.observer = { event in
///     if case let .progress(step, fraction) = event { print("\(step.id): \(Int(fraction * 100))%") }
/// }
/// ```
///
/// Events arrive on the scheduler's threads, several at once when stores run in parallel: an
/// observer must be quick and thread-safe. To keep state across events under Swift 6 (an
/// observer is `@Sendable`), iterate a run's ``MigrationRunHandle/events`` instead, or read its
/// ``MigrationRunHandle/snapshot``.
public enum MigrationEvent: Sendable, CustomStringConvertible {
    /// The run planned these steps and is about to start them.
    case planned(MigrationPlan)
    /// A step started.
    case started(PlannedStep)
    /// A running step reported progress (0...1).
    case progress(PlannedStep, Double)
    /// A step was applied after `duration` seconds (a step found already applied is
    /// ``alreadyApplied(_:level:)`` instead).
    case finished(PlannedStep, duration: TimeInterval)
    /// A step threw; its level is unchanged.
    case failed(PlannedStep, any Error)
    /// A step will not run: a step it depends on failed (`because`), or the run was cancelled or
    /// stopped (`because` is `nil`).
    case skipped(PlannedStep, because: PlannedStep.ID?)
    /// A step waits for its store: another process or connection holds the lock it needs (see
    /// ``StoreWait``). The step goes on by itself when the lock is free, or fails once the
    /// store's time-out has passed.
    case waiting(PlannedStep, StoreWait)
    /// A step found its work already done when it read its store's record under the lock
    /// (another process or run did it): nothing ran. `level` is the manager's level it found.
    case alreadyApplied(PlannedStep, level: Version?)
    /// A batch of a resumable migration committed: how far it has got.
    case batchCommitted(PlannedStep, StepProgress)
    /// A step was left for later: a deferred migration or one waiting for it (`progress` `nil`),
    /// or a resumable migration stopped between batches with its progress committed.
    case postponed(PlannedStep, StepProgress?)

    /// One line for a log: `library@2.0: skipped because library@1.1 failed`.
    public var description: String {
        switch self {
        case .planned(let plan):
            return plan.isUpToDate ? "planned: up to date" : "planned \(plan.steps.count) step\(plan.steps.count == 1 ? "" : "s")"
        case .started(let step): return "\(step.title): started"
        case let .progress(step, fraction): return "\(step.title): \(Int((fraction * 100).rounded()))%"
        case let .finished(step, duration): return "\(step.title): finished in \(MigrationReport.format(duration))"
        case let .failed(step, error): return "\(step.title): failed: \(error)"
        case let .skipped(step, failed?): return "\(step.title): skipped because \(failed) failed"
        case .skipped(let step, nil): return "\(step.title): skipped (the run was cancelled or stopped)"
        case let .waiting(step, wait): return "\(step.title): \(wait)"
        case let .alreadyApplied(step, level):
            return "\(step.title): already applied by another run or process (level \(level?.description ?? "none"))"
        case let .batchCommitted(step, progress): return "\(step.title): batch committed, \(progress)"
        case let .postponed(step, progress?): return "\(step.title): postponed, \(progress)"
        case .postponed(let step, nil): return "\(step.title): deferred to the background"
        }
    }
}
