import Foundation

/// Turns a run's step results into its ``MigrationReport``: each step's outcome and timing, and
/// each manager's level after the run as the records its steps committed give it.
enum ReportBuilder {
    static func report(
        executable: ExecutablePlan, managers: [ManagerDefinition], results: [Scheduler.Result],
        notes: [Int: [String]] = [:], startedAt: Date, duration: TimeInterval, planningDuration: TimeInterval
    ) -> MigrationReport {
        let plan = executable.plan
        // The scheduler skips a step for whichever of the steps it waits for ended first; when
        // one failed and another stopped short, that order varies from run to run. The report
        // names the failure, the earliest in plan order among the steps it waits for, directly
        // or not: made only for a run with skipped steps.
        var predecessors: [[Int]] = []
        func failedCause(of step: Int) -> Int? {
            if predecessors.isEmpty {
                predecessors = Array(repeating: [], count: results.count)
                for (from, to) in zip(executable.edgeFrom, executable.edgeTo) { predecessors[to].append(from) }
            }
            var seen = Set<Int>(), stack = predecessors[step], earliest: Int?
            while let predecessor = stack.popLast() {
                guard seen.insert(predecessor).inserted else { continue }
                if case .failed = results[predecessor].outcome { earliest = min(earliest ?? predecessor, predecessor) }
                stack.append(contentsOf: predecessors[predecessor])
            }
            return earliest
        }
        var levelAfter = executable.records.map(\.level)
        // A store another run created while this one was planned was not created by this one.
        var appliedAny = Array(repeating: false, count: managers.count)
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
            case .applied(let level):
                outcome = .applied
                levelAfter[manager] = level
                appliedAny[manager] = true
            case .alreadyApplied(let level):
                outcome = .alreadyApplied(level: level)
                levelAfter[manager] = level
            case .stoppedShort(.betweenBatches(let progress)):
                outcome = .inProgress(progress)
            case .stoppedShort(.deferred):
                outcome = .deferred
            case .failed(let failure):
                outcome = .failed(message: "\(failure)")
                error = failure
            case .skipped:
                if let failed = failedCause(of: index) {
                    outcome = .skipped(because: plan.steps[failed].id)
                } else {
                    outcome = .deferred
                }
            case .cancelled:
                outcome = .cancelled
            }
            steps.append(.init(
                step: planned, outcome: outcome, startedAt: result.startedAt, duration: result.duration, error: error,
                notes: notes[index] ?? []))
        }
        let managerReports = managers.enumerated().map { index, manager in
            MigrationReport.Manager(
                name: manager.name, store: manager.storeDescription,
                levelBefore: executable.records[index].level, levelAfter: levelAfter[index],
                createdStore: appliedAny[index] && plan.managers[index].createsStore && manager.storeExists(),
                ahead: plan.managers[index].ahead)
        }
        return MigrationReport(
            appVersion: plan.appVersion, startedAt: startedAt, duration: duration, planningDuration: planningDuration,
            steps: steps, managers: managerReports, diagnostics: plan.diagnostics,
            changedFingerprints: plan.managers.flatMap(\.changedFingerprints))
    }
}
