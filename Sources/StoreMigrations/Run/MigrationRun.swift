import Dispatch
import Foundation

/// One execution of a plan: hands each step the scheduler starts to its manager's store through
/// the step executor, tells the observer, and reports. The progress tree is ``RunProgress``'s,
/// the report ``ReportBuilder``'s.
final class MigrationRun: MigrationRunControl, Sendable {
    /// Which part of the work a run does.
    enum Phase: Sendable {
        /// At launch: deferred steps are left for the background, and a resumable step still
        /// running at `deadline` stops after its batch.
        case launch(deadline: ContinuousClock.Instant?)
        /// In the background: everything pending, deferred steps included.
        case background
    }

    private let executable: ExecutablePlan
    private let phase: Phase
    private let pause = PauseGate()
    /// The steps that stopped short (deferred, or stopped between batches), so that their
    /// dependents are told they are postponed rather than skipped for a failure.
    private let stoppedShort = StoppedShortSteps()
    private let notes = StepNotes()
    private let managers: [ManagerDefinition]
    private let observer: (@Sendable (MigrationEvent) -> Void)?
    private let startedAt: Date
    private let clockStart: ContinuousClock.Instant
    private let planningDuration: TimeInterval
    private let runProgress: RunProgress
    private let scheduler = LockedScheduler()

    var progress: Progress { runProgress.progress }

    /// Holds the scheduler, which needs the run's `execute` closure and so is made after it.
    private final class LockedScheduler: @unchecked Sendable {
        // @unchecked: both properties are only touched with `lock` held.
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
        executable: ExecutablePlan, managers: [ManagerDefinition], observer: (@Sendable (MigrationEvent) -> Void)?,
        startedAt: Date, clockStart: ContinuousClock.Instant, planningDuration: TimeInterval, progress: Progress,
        phase: Phase = .launch(deadline: nil)
    ) {
        self.executable = executable
        self.phase = phase
        self.managers = managers
        self.observer = observer
        self.startedAt = startedAt
        self.clockStart = clockStart
        self.planningDuration = planningDuration
        self.runProgress = RunProgress(progress: progress, stepCount: executable.plan.steps.count)
    }

    /// Whether the run or its progress was cancelled. The progress is checked too because a
    /// parent's cancellation reaches `cancellationHandler` asynchronously.
    var isCancelled: Bool { scheduler.isCancelled || progress.isCancelled }

    func cancel() {
        scheduler.cancel()
        pause.resume()
    }

    /// Holds resumable steps between two batches until ``resume()``; other steps are not held.
    func pauseBetweenBatches() { pause.pause() }

    func resume() { pause.resume() }

    func shouldStopBetweenBatches() -> Bool {
        pause.waitWhilePaused { isCancelled }
        if isCancelled { return true }
        if case .launch(let deadline?) = phase { return ContinuousClock.now >= deadline }
        return false
    }

    var appVersion: Version? { executable.plan.appVersion }

    func addNote(_ note: String, ofStep step: Int) {
        notes.add(note, ofStep: step)
    }

    func reportBatch(_ progress: StepProgress, ofStep step: Int) {
        observer?(.batchCommitted(executable.plan.steps[step], progress))
    }

    /// - Parameter maxConcurrentStores: `nil` for one store per active processor.
    func start(maxConcurrentStores: Int?, failurePolicy: FailurePolicy, completion: @escaping @Sendable (MigrationReport) -> Void) {
        observer?(.planned(executable.plan))
        // The most common launch has nothing to do: report at once, on the caller's thread,
        // rather than wake a queue and wait for it.
        guard !executable.plan.steps.isEmpty else {
            completion(report(from: []))
            return
        }
        // So is a launch whose every step is deferred: each is postponed without running, in
        // plan order, as the scheduler would have postponed it.
        if case .launch = phase, !executable.stepDeferred.isEmpty, !executable.stepDeferred.contains(false) {
            completion(report(from: executable.plan.steps.indices.map { execute($0) }))
            return
        }
        let steps = StepGraph(
            stores: executable.stepStores, storeCount: executable.storeCount,
            edgeFrom: executable.edgeFrom, edgeTo: executable.edgeTo)
        let scheduler = Scheduler(
            steps: steps, maxConcurrentStores: maxConcurrentStores ?? ProcessInfo.processInfo.activeProcessorCount,
            failurePolicy: failurePolicy,
            execute: { [self] index in execute(index) },
            onSkip: { [self] index, cause in
                runProgress.finish(step: index)
                if let cause, stoppedShort.contains(cause) {
                    observer?(.postponed(executable.plan.steps[index], nil))
                } else {
                    observer?(.skipped(executable.plan.steps[index], because: cause.map { executable.plan.steps[$0].id }))
                }
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
        // Events carry the planned step; without an observer it is not copied at all (a copy
        // retains its dependency list, a cost runs of many small steps show).
        let observer = self.observer
        if isCancelled {
            runProgress.finish(step: index)
            observer?(.skipped(executable.plan.steps[index], because: nil))
            return .init(outcome: .cancelled)
        }
        if case .launch = phase, !executable.stepDeferred.isEmpty, executable.stepDeferred[index] {
            stoppedShort.insert(index)
            runProgress.finish(step: index)
            observer?(.postponed(executable.plan.steps[index], nil))
            return .init(outcome: .stoppedShort(.deferred))
        }
        let manager = managers[executable.stepManagers[index]]
        if let observer { observer(.started(executable.plan.steps[index])) }
        let startedAt = Date()
        let start = ContinuousClock.now
        var outcome: Outcome
        do {
            outcome = try manager.perform(executable.step(at: index), StepSource(run: self, step: index))
        } catch {
            outcome = .failed(error)
        }
        if case .stoppedShort(let reason) = outcome {
            if case .betweenBatches(let progress) = reason { observer?(.postponed(executable.plan.steps[index], progress)) }
            // Stopped by a cancellation, the run did not do what it was asked: the step ends as
            // cancelled (its progress stays in the record); stopped by the launch budget, it is
            // postponed, and the launch succeeds.
            if isCancelled {
                outcome = .cancelled
            } else {
                stoppedShort.insert(index)
            }
        }
        let duration = (ContinuousClock.now - start).seconds
        runProgress.finish(step: index)
        if let observer {
            switch outcome {
            case .failed(let error): observer(.failed(executable.plan.steps[index], error))
            case .alreadyApplied(let level): observer(.alreadyApplied(executable.plan.steps[index], level: level))
            case .applied: observer(.finished(executable.plan.steps[index], duration: duration))
            case .stoppedShort, .cancelled, .skipped: break
            }
        }
        return .init(outcome: outcome, startedAt: startedAt, duration: duration)
    }

    func progress(ofStep step: Int) -> Progress {
        runProgress.child(ofStep: step)
    }

    func reportWait(_ wait: StoreWait, ofStep step: Int) {
        observer?(.waiting(executable.plan.steps[step], wait))
    }

    func reportProgress(ofStep step: Int, fraction: Double) {
        if runProgress.report(fraction, ofStep: step) { observer?(.progress(executable.plan.steps[step], fraction)) }
    }

    private func report(from results: [Scheduler.Result]) -> MigrationReport {
        runProgress.finishRun()
        return ReportBuilder.report(
            executable: executable, managers: managers, results: results, notes: notes.all, startedAt: startedAt,
            duration: (ContinuousClock.now - clockStart).seconds, planningDuration: planningDuration)
    }
}

/// Where resumable steps wait between two batches while their run is paused.
private final class PauseGate: @unchecked Sendable {
    // @unchecked: `paused` is only read or written with `condition` locked.
    private let condition = NSCondition()
    private var paused = false

    func pause() {
        condition.withLock { paused = true }
    }

    func resume() {
        condition.withLock {
            paused = false
            condition.broadcast()
        }
    }

    /// Returns once the gate is open, or once `stop()` says to stop waiting (asked every second
    /// as well as on every change, so that a cancellation is noticed).
    func waitWhilePaused(until stop: () -> Bool) {
        condition.lock()
        defer { condition.unlock() }
        while paused, !stop() {
            _ = condition.wait(until: Date().addingTimeInterval(1))
        }
    }
}

/// The steps of a run that stopped short, from any thread.
private final class StoppedShortSteps: @unchecked Sendable {
    // @unchecked: `indices` is only touched with `lock` held.
    private let lock = NSLock()
    private var indices: Set<Int> = []

    func insert(_ step: Int) { lock.withLock { _ = indices.insert(step) } }
    func contains(_ step: Int) -> Bool { lock.withLock { indices.contains(step) } }
}

/// The notes bodies left for their steps' lines of the report, from any thread.
private final class StepNotes: @unchecked Sendable {
    // @unchecked: `notes` is only touched with `lock` held.
    private let lock = NSLock()
    private var notes: [Int: [String]] = [:]

    func add(_ note: String, ofStep step: Int) { lock.withLock { notes[step, default: []].append(note) } }
    var all: [Int: [String]] { lock.withLock { notes } }
}
