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
    /// Steps finished without a child progress and not yet added to `progress`: updating a
    /// `Progress` costs more than a no-op step, so large runs add them in strides of 0.1%.
    private var unreportedSteps: Int64 = 0
    private let progressStride: Int64

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
        self.stepProgress = Array(repeating: nil, count: executable.graph.count)
        self.progressStride = Int64(max(1, executable.graph.count / 1_000))
        // A run with nothing to do still has one unit, completed with its report, so that the
        // caller's progress completes on the most common launch.
        progress.totalUnitCount = Int64(max(1, executable.graph.count))
    }

    /// Whether the run or its progress was cancelled. The progress is checked too because a
    /// parent's cancellation reaches `cancellationHandler` asynchronously.
    var isCancelled: Bool { scheduler.isCancelled || progress.isCancelled }

    func cancel() { scheduler.cancel() }

    /// - Parameter maxConcurrentStores: `nil` for one store per active processor.
    func start(maxConcurrentStores: Int?, failurePolicy: FailurePolicy, completion: @escaping @Sendable (MigrationReport) -> Void) {
        observer?(.planned(executable.plan))
        // The most common launch has nothing to do: report at once, on the caller's thread,
        // rather than wake a queue and wait for it.
        guard executable.graph.count > 0 else {
            completion(report(from: []))
            return
        }
        let scheduler = Scheduler(
            steps: executable.graph, maxConcurrentStores: maxConcurrentStores ?? ProcessInfo.processInfo.activeProcessorCount,
            failurePolicy: failurePolicy,
            execute: { [self] index in execute(index) },
            onSkip: { [self] index, failed in
                finishProgress(ofStep: index)
                observer?(.skipped(executable.plan.steps[index], because: failed.map { executable.plan.steps[$0].id }))
            })
        self.scheduler.value = scheduler
        scheduler.start { [self] results in
            // The scheduler's closures hold this run: letting go of it frees the run, its plan and
            // its stores (a SQLite store's connection) once the report is made.
            self.scheduler.value = nil
            completion(report(from: results))
        }
        if self.scheduler.isCancelled { scheduler.cancel() }
    }

    private func execute(_ index: Int) -> Scheduler.Result {
        if isCancelled {
            finishProgress(ofStep: index)
            observer?(.skipped(executable.plan.steps[index], because: nil))
            return Scheduler.Result(outcome: .cancelled)
        }
        let manager = executable.managers[executable.stepManagers[index]]
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
                outcome = .succeeded(try manager.apply(executable.stepPositions[index], context))
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
                unreportedSteps += 1
                if unreportedSteps >= progressStride { flushUnreportedSteps() }
            }
        }
    }

    /// Call with `progressLock` held.
    private func flushUnreportedSteps() {
        guard unreportedSteps > 0 else { return }
        progress.completedUnitCount += unreportedSteps
        unreportedSteps = 0
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

    /// Runs the hook under the store's lock or transaction, so that of several processes (or
    /// runs) only one runs it for a given app version, and records that version with it.
    private func runHook(of manager: ManagerDefinition, current: Version) throws -> StoreApplyOutcome {
        var outcome = StoreApplyOutcome.applied
        var hookError: (any Error)?
        try manager.updateState { state in
            guard state.appVersion != current else {
                outcome = .alreadyApplied(level: current)
                return
            }
            do {
                try manager.hook?(state.appVersion, current)
                state.appVersion = current
            } catch {
                hookError = error
            }
        }
        if let hookError { throw hookError }
        return outcome
    }

    private func report(from results: [Scheduler.Result]) -> MigrationReport {
        progressLock.withLock {
            flushUnreportedSteps()
            if results.isEmpty { progress.completedUnitCount = progress.totalUnitCount }
        }
        let plan = executable.plan
        var levelAfter = executable.states.map(\.level)
        var steps: [MigrationReport.Step] = []
        steps.reserveCapacity(results.count)
        for (index, result) in results.enumerated() {
            let planned = plan.steps[index]
            let manager = executable.stepManagers[index]
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
