/// Where a run stands, as ``MigrationRunHandle/snapshot`` reads it at one moment: how many steps
/// ended and how, which run now and how far each has got.
///
/// The handle keeps it up to date from the run's events under a lock of its own, so that a
/// progress bar or a health check reads it from any thread or task with nothing to lock:
///
/// ```swift
/// let handle = coordinator.run { _ in }
/// while !handle.snapshot.isFinished {
///     print(handle.snapshot)   // 3 of 8 steps ended (41%); running library@2.0 (30%)
///     try await Task.sleep(for: .seconds(1))
/// }
/// ```
public struct MigrationRunSnapshot: Sendable, Hashable, Codable, CustomStringConvertible {
    /// A step that has started and not ended.
    public struct RunningStep: Sendable, Hashable, Codable {
        /// The step.
        public let id: PlannedStep.ID
        /// How far its body has got by its own reports (0...1): 0 until it reports.
        public internal(set) var fraction: Double
    }

    /// How many steps the run planned: 0 until it has planned.
    public internal(set) var stepCount = 0
    /// How many steps were applied.
    public internal(set) var appliedCount = 0
    /// How many steps found their work already done by another process or run.
    public internal(set) var alreadyAppliedCount = 0
    /// How many steps threw.
    public internal(set) var failedCount = 0
    /// How many steps will not run: a step they depend on failed, or the run was cancelled.
    public internal(set) var skippedCount = 0
    /// How many steps were left for later: deferred, or resumable ones stopped between batches.
    public internal(set) var postponedCount = 0
    /// The steps running now, in the order they started.
    public internal(set) var running: [RunningStep] = []
    /// Whether the run has ended; its outcome is then ``MigrationRunHandle/outcome``.
    public internal(set) var isFinished = false

    /// How many steps have ended, in any way.
    public var endedCount: Int { appliedCount + alreadyAppliedCount + failedCount + skippedCount + postponedCount }

    /// The share of the run done (0...1): the steps that ended, and the running ones' fractions.
    public var fractionCompleted: Double {
        guard stepCount > 0 else { return isFinished ? 1 : 0 }
        return min(1, (Double(endedCount) + running.reduce(0) { $0 + $1.fraction }) / Double(stepCount))
    }

    /// `3 of 8 steps ended (41%); running library@2.0 (30%)`.
    public var description: String {
        var text = "\(endedCount) of \(stepCount) step\(stepCount == 1 ? "" : "s") ended (\(Int(fractionCompleted * 100))%)"
        if failedCount > 0 { text += ", \(failedCount) failed" }
        if !running.isEmpty {
            text += "; running " + running.map { "\($0.id) (\(Int($0.fraction * 100))%)" }.joined(separator: ", ")
        }
        return text + (isFinished ? "; finished" : "")
    }

    /// Takes `event` into account; events come in the order the run sends them.
    mutating func apply(_ event: MigrationEvent) {
        switch event {
        case .planned(let plan): stepCount = plan.steps.count
        case .started(let step): running.append(RunningStep(id: step.id, fraction: 0))
        case let .progress(step, fraction):
            let id = step.id
            if let index = running.firstIndex(where: { $0.id == id }) { running[index].fraction = fraction }
        case .finished(let step, _): end(step, counting: \.appliedCount)
        case .alreadyApplied(let step, _): end(step, counting: \.alreadyAppliedCount)
        case .failed(let step, _): end(step, counting: \.failedCount)
        case .skipped(let step, _): end(step, counting: \.skippedCount)
        case .postponed(let step, _): end(step, counting: \.postponedCount)
        case .waiting, .batchCommitted: break
        }
    }

    private mutating func end(_ step: PlannedStep, counting count: WritableKeyPath<Self, Int>) {
        let id = step.id
        running.removeAll { $0.id == id }
        self[keyPath: count] += 1
    }
}
