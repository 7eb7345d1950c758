import Dispatch
import Foundation

/// One execution of a plan: carries out each step against its store, tells the observer, keeps
/// the run's `Progress` tree, and turns the scheduler's results into a ``MigrationReport``.
final class MigrationRun: MigrationRunControl, @unchecked Sendable {
    private let executable: ExecutablePlan
    private let observer: (@Sendable (MigrationEvent) -> Void)?
    private let startedAt: Date
    private let clockStart: ContinuousClock.Instant
    private let planningDuration: TimeInterval
    let progress: Progress
    private let scheduler: LockedScheduler
    /// Serializes changes to the progress tree: swift-corelibs-foundation's `Progress` does not
    /// synchronize adding children or propagating counts to a shared parent. Guards `stepProgress`.
    private let progressLock = NSLock()
    /// Each step's child progress, made when its body first asks for it.
    private var stepProgress: [Progress?]

    /// Holds the scheduler, which needs the run's `execute` closure and so is made after it.
    private final class LockedScheduler: @unchecked Sendable {
        private let lock = NSLock()
        private var scheduler: Scheduler?
        private var cancelled = false
        var value: Scheduler? {
            get { lock.withLock { scheduler } }
            set { lock.withLock { scheduler = newValue } }
        }
        var isCancelled: Bool { lock.withLock { cancelled } }
        func cancel() {
            let scheduler = lock.withLock { () -> Scheduler? in
                cancelled = true
                return self.scheduler
            }
            scheduler?.cancel()
        }
    }

    init(
        executable: ExecutablePlan, observer: (@Sendable (MigrationEvent) -> Void)?, startedAt: Date,
        clockStart: ContinuousClock.Instant, planningDuration: TimeInterval, progress: Progress
    ) {
        self.planningDuration = planningDuration
        self.executable = executable
        self.observer = observer
        self.startedAt = startedAt
        self.clockStart = clockStart
        self.progress = progress
        self.scheduler = LockedScheduler()
        self.stepProgress = Array(repeating: nil, count: executable.steps.count)
        progress.totalUnitCount = Int64(executable.steps.count)
    }

    /// Whether the run or its progress was cancelled. The progress is checked too because a
    /// parent's cancellation reaches `cancellationHandler` asynchronously.
    var isCancelled: Bool { scheduler.isCancelled || progress.isCancelled }

    func cancel() { scheduler.cancel() }

    func start(maxConcurrentStores: Int, failurePolicy: FailurePolicy, completion: @escaping @Sendable (MigrationReport) -> Void) {
        observer?(.planned(executable.plan))
        let scheduler = Scheduler(
            steps: executable.steps, storeCount: executable.storeCount, maxConcurrentStores: maxConcurrentStores,
            failurePolicy: failurePolicy,
            execute: { [self] index in execute(index) },
            onSkip: { [self] index, failed in
                finishProgress(ofStep: index)
                observer?(.skipped(executable.plan.steps[index], because: failed.map { executable.plan.steps[$0].id }))
            })
        self.scheduler.value = scheduler
        scheduler.start { [self] results in
            // The scheduler's closures hold the run, which holds the scheduler: letting go of it
            // here frees the run, its plan and the stores it reached (a SQLite store's open
            // connection, for one) once the caller drops them.
            self.scheduler.value = nil
            completion(report(from: results))
        }
        if self.scheduler.isCancelled { scheduler.cancel() }
    }

    private func execute(_ index: Int) -> Scheduler.Result {
        if isCancelled {
            finishProgress(ofStep: index)
            return Scheduler.Result(outcome: .cancelled)
        }
        let step = executable.steps[index]
        let manager = executable.managers[step.manager]
        let action = executable.plan.steps[index].action
        let version = executable.plan.steps[index].version
        // Events carry the planned step; without an observer the step is not copied at all.
        let observer = self.observer
        if let observer { observer(.started(executable.plan.steps[index])) }
        let startedAt = Date()
        let start = ContinuousClock.now
        let outcome: Scheduler.Outcome
        do {
            switch action {
            case .migrate:
                let context = MigrationContext(manager: manager.name, version: version!, run: self, step: index)
                outcome = .succeeded(try manager.apply(step.position!, context))
            case .baseline:
                outcome = .succeeded(try recordBaseline(version!, of: manager))
            case .reset:
                try manager.rebuild()
                outcome = .succeeded(.applied)
            case .appVersionChange:
                outcome = .succeeded(try runHook(of: manager, current: version!))
            }
        } catch {
            outcome = .failed(error)
        }
        let duration = (ContinuousClock.now - start).seconds
        finishProgress(ofStep: index)
        if let observer {
            switch outcome {
            case .failed(let error): observer(.failed(executable.plan.steps[index], error))
            default: observer(.finished(executable.plan.steps[index], duration: duration))
            }
        }
        return Scheduler.Result(outcome: outcome, startedAt: startedAt, duration: duration)
    }

    func progress(ofStep step: Int) -> Progress {
        progressLock.withLock { childProgress(ofStep: step) }
    }

    func reportProgress(ofStep step: Int, fraction: Double) {
        progressLock.withLock { childProgress(ofStep: step).completedUnitCount = MigrationContext.units(fraction) }
        observer?(.progress(executable.plan.steps[step], fraction))
    }

    /// Call with `progressLock` held.
    private func childProgress(ofStep step: Int) -> Progress {
        if let existing = stepProgress[step] { return existing }
        let child = Progress(totalUnitCount: MigrationContext.progressUnits, parent: progress, pendingUnitCount: 1)
        stepProgress[step] = child
        return child
    }

    /// Completes a step's unit of the run's progress, through its child when it has one.
    private func finishProgress(ofStep step: Int) {
        progressLock.withLock {
            if let child = stepProgress[step] {
                child.completedUnitCount = child.totalUnitCount
            } else {
                progress.completedUnitCount += 1
            }
        }
    }

    /// Records a first-launch baseline unless another process gave the manager a level meanwhile.
    private func recordBaseline(_ version: Version, of manager: ManagerDefinition) throws -> StoreApplyOutcome {
        var outcome = StoreApplyOutcome.applied
        try manager.updateState { state in
            if let level = state.level {
                outcome = .alreadyApplied(level: level)
            } else {
                state.level = version
            }
        }
        return outcome
    }

    private func runHook(of manager: ManagerDefinition, current: Version) throws -> StoreApplyOutcome {
        let recorded = try manager.readState().appVersion
        if recorded == current { return .alreadyApplied(level: current) }
        try manager.hook?(recorded, current)
        try manager.updateState { state in state.appVersion = current }
        return .applied
    }

    private func report(from results: [Scheduler.Result]) -> MigrationReport {
        let plan = executable.plan
        var levelAfter = executable.states.map(\.level)
        var steps: [MigrationReport.Step] = []
        steps.reserveCapacity(results.count)
        for (index, result) in results.enumerated() {
            let planned = plan.steps[index]
            let manager = executable.steps[index].manager
            let outcome: MigrationReport.Step.Outcome
            var error: (any Error)?
            switch result.outcome {
            case .succeeded(.applied):
                outcome = .applied
                switch planned.action {
                case .migrate, .baseline: levelAfter[manager] = planned.version
                case .reset: levelAfter[manager] = nil
                case .appVersionChange: break
                }
            case .succeeded(.alreadyApplied(let level)):
                outcome = .alreadyApplied(level: level)
                if planned.action != .appVersionChange { levelAfter[manager] = level }
            case .failed(let failure):
                outcome = .failed(message: "\(failure)")
                error = failure
            case .skipped(let failed):
                outcome = .skipped(because: plan.steps[failed].id)
            case .cancelled:
                outcome = .cancelled
            }
            steps.append(.init(step: planned, outcome: outcome, startedAt: result.startedAt, duration: result.duration, error: error))
        }
        let managers = executable.managers.enumerated().map { index, manager in
            MigrationReport.Manager(
                name: manager.name, store: manager.storeDescription,
                levelBefore: executable.states[index].level, levelAfter: levelAfter[index])
        }
        return MigrationReport(
            appVersion: plan.appVersion, startedAt: startedAt, duration: (ContinuousClock.now - clockStart).seconds,
            planningDuration: planningDuration,
            steps: steps, managers: managers, diagnostics: plan.diagnostics)
    }
}
