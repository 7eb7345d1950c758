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
/// observer must be quick and thread-safe.
public enum MigrationEvent: Sendable {
    /// The run planned these steps and is about to start them.
    case planned(MigrationPlan)
    /// A step started.
    case started(PlannedStep)
    /// A running step reported progress (0...1).
    case progress(PlannedStep, Double)
    /// A step was applied (or found already applied by another process) after `duration` seconds.
    case finished(PlannedStep, duration: TimeInterval)
    /// A step threw; its level is unchanged.
    case failed(PlannedStep, any Error)
    /// A step will not run: a step it depends on failed (`because`), or the run was cancelled or
    /// stopped (`because` is `nil`).
    case skipped(PlannedStep, because: PlannedStep.ID?)
}
