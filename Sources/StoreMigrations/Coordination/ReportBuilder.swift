import Foundation

/// Turns a run's step results into its ``MigrationReport``: each step's outcome and timing, and
/// each manager's level after the run as the records its steps committed give it.
enum ReportBuilder {
    static func report(
        executable: ExecutablePlan, managers: [ManagerDefinition], results: [Scheduler<StepOutcome>.Result],
        startedAt: Date, duration: TimeInterval, planningDuration: TimeInterval
    ) -> MigrationReport {
        let plan = executable.plan
        var levelAfter = executable.records.map(\.level)
        var steps: [MigrationReport.Step] = []
        steps.reserveCapacity(results.count)
        for (index, result) in results.enumerated() {
            let planned = plan.steps[index]
            let manager = executable.stepManagers[index]
            let outcome: MigrationReport.Step.Outcome
            var error: (any Error)?
            switch result.outcome {
            // A manager's steps run one after the other in plan order: the last one's record,
            // read or committed under the store's lock, holds its level after the run.
            case .succeeded(.applied(let level)):
                outcome = .applied
                levelAfter[manager] = level
            case .succeeded(.alreadyApplied(let level)):
                outcome = .alreadyApplied(level: level)
                levelAfter[manager] = level
            case .succeeded(.suspended(let progress)), .postponed(.suspended(let progress)):
                outcome = .inProgress(progress)
            case .succeeded(.deferred), .postponed:
                outcome = .deferred
            case .failed(let failure):
                outcome = .failed(message: "\(failure)")
                error = failure
            case .skipped(let cause):
                if case .postponed = results[cause].outcome {
                    outcome = .deferred
                } else {
                    outcome = .skipped(because: plan.steps[cause].id)
                }
            case .cancelled:
                outcome = .cancelled
            }
            steps.append(.init(step: planned, outcome: outcome, startedAt: result.startedAt, duration: result.duration, error: error))
        }
        let managerReports = managers.enumerated().map { index, manager in
            MigrationReport.Manager(
                name: manager.name, store: manager.storeDescription,
                levelBefore: executable.records[index].level, levelAfter: levelAfter[index],
                createdStore: plan.managers[index].createsStore && manager.storeExists(),
                ahead: plan.managers[index].ahead)
        }
        return MigrationReport(
            appVersion: plan.appVersion, startedAt: startedAt, duration: duration, planningDuration: planningDuration,
            steps: steps, managers: managerReports, diagnostics: plan.diagnostics,
            changedFingerprints: plan.managers.flatMap(\.changedFingerprints))
    }
}
