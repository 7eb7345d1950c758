import Foundation

/// What a run did: each step's outcome and timing, and each manager's level before and after.
///
/// ```swift
/// let report = try coordinator.run()
/// print(report)               // one line per step, then the levels
/// if report.didRunAnything { analytics.log("migrated", report.duration) }
/// ```
public struct MigrationReport: Sendable, Codable, CustomStringConvertible {
    /// How one step of the plan went.
    public struct Step: Sendable, Codable, CustomStringConvertible {
        /// How a step ended.
        public enum Outcome: Sendable, Hashable, Codable {
            /// The step ran and its level was recorded.
            case applied
            /// The store's record, read again under its lock, showed the step done (by another
            /// process or run); nothing ran. The manager's level was then `level`.
            case alreadyApplied(level: Version?)
            /// The step threw; its level is unchanged. `message` describes the error.
            case failed(message: String)
            /// The step did not run because a step it depends on failed.
            case skipped(because: PlannedStep.ID)
            /// The step did not run because the run was cancelled or stopped at a failure.
            case cancelled
            /// A resumable migration stopped between two batches, its progress committed (the
            /// launch budget was spent, or the run was cancelled): it resumes in the background or
            /// at the next run. `progress` is how far it got, `nil` if no batch committed.
            case inProgress(StepProgress?)
            /// The step was left for the background: a deferred migration, or one that waits for
            /// a deferred or unfinished resumable migration.
            case deferred
        }

        /// The planned step.
        public let step: PlannedStep
        /// The step's identifier, `library@2.0`.
        public var id: PlannedStep.ID { step.id }
        /// How it ended.
        public let outcome: Outcome
        /// When it started, if it ran.
        public let startedAt: Date?
        /// How long it took, in seconds, if it ran.
        public let duration: TimeInterval?
        /// The error a failed step threw (not encoded).
        public let error: (any Error)?
        /// What the step's body left worth a look without failing it, in the order it left them:
        /// a ``Preferences/renameKey(_:to:)`` that found no value to move, or a
        /// ``MigrationContext/note(_:)``.
        public let notes: [String]

        private enum CodingKeys: String, CodingKey { case step, outcome, startedAt, duration, notes }

        init(
            step: PlannedStep, outcome: Outcome, startedAt: Date?, duration: TimeInterval?, error: (any Error)?,
            notes: [String] = []
        ) {
            self.step = step
            self.outcome = outcome
            self.startedAt = startedAt
            self.duration = duration
            self.error = error
            self.notes = notes
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            step = try container.decode(PlannedStep.self, forKey: .step)
            outcome = try container.decode(Outcome.self, forKey: .outcome)
            startedAt = try container.decodeIfPresent(Date.self, forKey: .startedAt)
            duration = try container.decodeIfPresent(TimeInterval.self, forKey: .duration)
            notes = try container.decodeIfPresent([String].self, forKey: .notes) ?? []
            error = nil
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(step, forKey: .step)
            try container.encode(outcome, forKey: .outcome)
            try container.encodeIfPresent(startedAt, forKey: .startedAt)
            try container.encodeIfPresent(duration, forKey: .duration)
            if !notes.isEmpty { try container.encode(notes, forKey: .notes) }
        }

        /// The step's line, then a line for each note.
        public var description: String {
            ([line] + notes.map { "    note: \($0)" }).joined(separator: "\n")
        }

        private var line: String {
            let timing = duration.map { " in " + MigrationReport.format($0) } ?? ""
            switch outcome {
            case .applied: return "\(step.title): applied\(timing)"
            case .alreadyApplied(let level): return "\(step.title): already applied by another run or process (level \(level?.description ?? "none"))"
            case .failed(let message): return "\(step.title): FAILED\(timing): \(message)"
            case .skipped(let failed): return "\(step.title): skipped because \(failed) failed"
            case .cancelled: return "\(step.title): not started (run cancelled or stopped)"
            case .inProgress(let progress):
                return "\(step.title): in progress\(timing), \(progress.map { "\($0)" } ?? "no batch committed"); resumes later"
            case .deferred: return "\(step.title): deferred to the background"
            }
        }
    }

    /// One manager's levels around the run.
    public struct Manager: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The manager's name.
        public let name: String
        /// The store it migrates.
        public let store: String
        /// Its level before the run.
        public let levelBefore: Version?
        /// Its level after the run.
        public let levelAfter: Version?
        /// Whether the run created the store: it did not exist when planned
        /// (``MigrationPlan/Manager/createsStore``) and does now.
        public let createdStore: Bool
        /// Its registered migrations past the app version, which never run in this version (as
        /// the plan lists them).
        public let ahead: [Version]

        /// The manager's line of the report's text: `library: level 1.0 → 2.0; ahead 2.1`.
        public var description: String {
            let before = levelBefore?.description ?? "none", after = levelAfter?.description ?? "none"
            return "\(name): level \(before == after ? before : "\(before) → \(after)")"
                + (createdStore ? "; store created (it did not exist)" : "")
                + (ahead.isEmpty ? "" : "; ahead " + ahead.map(\.description).joined(separator: ", "))
        }
    }

    /// The app version the run migrated to.
    public let appVersion: Version
    /// When the run started.
    public let startedAt: Date
    /// How long the run took, planning included, in seconds.
    public let duration: TimeInterval
    /// How long validating the graph, reading the levels and planning took, in seconds: the
    /// whole cost of a launch with nothing to do.
    public let planningDuration: TimeInterval
    /// Every planned step, in plan order.
    public let steps: [Step]
    /// Every manager, in registration order.
    public let managers: [Manager]
    /// The plan's diagnostics.
    public let diagnostics: [MigrationPlan.Diagnostic]
    /// The applied migrations edited since they ran that the run went on with, under
    /// ``FingerprintPolicy/warn`` (see ``MigrationPlan/Manager/changedFingerprints``).
    public let changedFingerprints: [FingerprintChange]

    /// Whether any step ran (`false` when everything was up to date).
    public var didRunAnything: Bool { steps.contains { $0.outcome == .applied } }

    /// Whether no step failed or was cancelled: every step was applied (or already applied by
    /// another process), deferred, or left in progress by the launch budget.
    public var succeeded: Bool {
        steps.allSatisfy { step in
            switch step.outcome {
            case .applied, .alreadyApplied, .deferred, .inProgress: return true
            case .failed, .skipped, .cancelled: return false
            }
        }
    }

    /// The steps left for later: deferred, or resumable ones stopped between batches.
    public var postponed: [Step] {
        steps.filter { step in
            switch step.outcome {
            case .deferred, .inProgress: return true
            default: return false
            }
        }
    }

    /// The steps that failed.
    public var failures: [Step] {
        steps.filter { if case .failed = $0.outcome { return true } else { return false } }
    }

    public var description: String {
        let applied = steps.filter { $0.outcome == .applied }.count
        let postponed = postponed.count
        // A launch budget that left steps for later did what it should: the headline says so,
        // rather than read as a shortfall.
        var lines = ["Migration to app version \(appVersion): "
            + (steps.isEmpty ? "nothing to do" : "\(applied) of \(steps.count) step\(steps.count == 1 ? "" : "s") applied")
            + (postponed == 0 ? "" : ", \(postponed) postponed (they resume later)")
            + " in \(Self.format(duration))" + (succeeded ? "." : ", with failures.")]
        lines += steps.map { "  \($0)" }
        lines += managers.map { "  \($0)" }
        lines += diagnostics.map { "  note: \($0)" }
        lines += changedFingerprints.map { "  warning: edited since applied: \($0)" }
        return lines.joined(separator: "\n")
    }

    static func format(_ seconds: TimeInterval) -> String {
        if seconds < 0.001 { return String(format: "%.0f µs", seconds * 1_000_000) }
        if seconds < 1 { return String(format: "%.1f ms", seconds * 1_000) }
        return String(format: "%.2f s", seconds)
    }
}

/// Thrown by `run()` when a step failed or the run was cancelled. Carries
/// the full report: the steps that did apply stay applied.
///
/// ```swift
/// do {
///     try coordinator.run()
/// } catch let error as MigrationRunError {
///     log(error.report)           // what applied, what failed, what was skipped
///     showRecoveryUI(error)       // the next launch resumes at the failed step
/// }
/// ```
public struct MigrationRunError: Error, Sendable, CustomStringConvertible, LocalizedError {
    /// What the run did.
    public let report: MigrationReport

    /// The first failed step's error, if a step failed.
    public var underlyingError: (any Error)? { report.failures.first?.error }

    /// Every failed step's error, in plan order, with the step it stopped.
    ///
    /// ```swift
    /// for (step, error) in runError.errors { log("\(step.id): \(error)") }
    /// ```
    public var errors: [(step: PlannedStep, error: any Error)] {
        report.failures.compactMap { failure in failure.error.map { (failure.step, $0) } }
    }

    public var description: String {
        var lines: [String] = []
        for failure in report.failures {
            let manager = report.managers.first { $0.name == failure.step.manager }
            let skipped = report.steps.filter { $0.outcome == .skipped(because: failure.step.id) }.map(\.step.id.description)
            let cause = failure.error.map { "\($0)".quotableInSentence } ?? "unknown error"
            // A store's own error usually names the store already: once is enough.
            let store = manager.map(\.store).map { cause.contains($0) ? "" : " on \($0)" } ?? " on its store"
            var line = "Migration \(failure.step.title)\(store) failed: \(cause). Its level stays at "
                + (manager?.levelAfter?.description ?? "none")
            line += skipped.isEmpty ? "." : "; skipped because of it: \(skipped.joined(separator: ", "))."
            lines.append(line)
        }
        let cancelled = report.steps.filter { $0.outcome == .cancelled }.count
        if cancelled > 0 { lines.append("\(cancelled) step\(cancelled == 1 ? " was" : "s were") not started: the run was cancelled or stopped.") }
        lines.append("Applied steps stay applied; fix the cause and run again: the next run resumes where this one stopped.")
        return lines.joined(separator: " ")
    }

    public var errorDescription: String? { description }
}
