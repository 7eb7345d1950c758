import Dispatch
import Foundation

/// Runs a plan's steps on Dispatch with Kahn's algorithm: a step is dispatched to a concurrent
/// queue once its predecessors are done (the first one runs on the thread that starts the run),
/// at most one step per store at a time and at most `maxConcurrentStores` at once, ready steps
/// starting in plan order.
///
/// A failed step's transitive dependents are skipped; independent work goes on unless the
/// failure policy says to stop. Cancelling starts nothing new; running steps finish. The
/// decisions live in ``SchedulerState``; this class runs them on its own queue.
final class Scheduler: @unchecked Sendable {
    // @unchecked: `state`, `completion` and `undeliveredSkips` are only touched with `lock` held;
    // the rest are constants. (`Synchronization.Mutex` would say so to the compiler, but needs
    // macOS 15 and iOS 18, past this package's platforms.)
    struct Result: Sendable {
        var outcome: Outcome
        var startedAt: Date?
        var duration: TimeInterval?
    }

    private let execute: @Sendable (Int) -> Result
    private let onSkip: @Sendable (_ step: Int, _ because: Int?) -> Void
    private let queue = DispatchQueue(label: "StoreMigrations.Scheduler", qos: .userInitiated, attributes: .concurrent)

    // Guards `state`, `completion` and `undeliveredSkips`; steps, skip notices and the completion run outside it, so
    // that an observer may call back into the run (to cancel it, say) without deadlocking.
    // Accesses made with `lock` held never overlap, so Swift's dynamic exclusivity checks, made
    // several times a step, are left out for the three.
    private let lock = NSLock()
    @exclusivity(unchecked) private var state: SchedulerState
    @exclusivity(unchecked) private var completion: (@Sendable ([Result]) -> Void)?
    /// Skip notices handed out but not yet delivered: the run completes only after the last one,
    /// so that no event arrives after `run()` returned.
    @exclusivity(unchecked) private var undeliveredSkips = 0

    /// - Parameters:
    ///   - execute: Runs one step and says how it ended; called on the scheduler's queue.
    ///   - onSkip: Told of each step that will not run, with the failed step it depended on
    ///     (`nil` when the run was cancelled or stopped).
    init(
        steps: StepGraph, maxConcurrentStores: Int, failurePolicy: FailurePolicy,
        execute: @escaping @Sendable (Int) -> Result,
        onSkip: @escaping @Sendable (_ step: Int, _ because: Int?) -> Void
    ) {
        self.execute = execute
        self.onSkip = onSkip
        self.state = SchedulerState(steps: steps, maxConcurrentStores: maxConcurrentStores, failurePolicy: failurePolicy)
    }

    /// Starts the run, and returns once the calling thread has run the first step that starts and
    /// those that follow it on one thread (``run(_:)``): the thread that starts a run either
    /// waits for it (`run()`) or is the run's own, so it does that work itself rather than wake a
    /// thread of the queue for it and wait (Benchmarks/BENCHMARKS.md, creation from the declared
    /// schema). `completion` receives every step's result, in plan order, on the thread that ran
    /// the last step.
    func start(completion: @escaping @Sendable ([Result]) -> Void) {
        lock.lock()
        self.completion = completion
        let actions = state.start()
        if let first = perform(actions, keepingOne: true) { run(first) }
    }

    /// Starts nothing new; steps already running finish, the others end as cancelled.
    func cancel() {
        lock.lock()
        let actions = state.cancel()
        perform(actions)
    }

    /// Runs `first`, then, on the same thread, the first step its end starts (most often the
    /// next migration of the same store), until a step's end starts none: a step that follows
    /// another waits for no thread.
    private func run(_ first: Int) {
        var step = first
        while true {
            let result = execute(step)
            lock.lock()
            let actions = state.finish(step, with: result)
            guard let next = perform(actions, keepingOne: true) else { return }
            step = next
        }
    }

    /// Call with `lock` held; releases it. Dispatches the steps `actions` starts, except the
    /// first when `keepingOne`: that one is returned, for the caller to run.
    @discardableResult
    private func perform(_ actions: SchedulerState.Actions, keepingOne: Bool = false) -> Int? {
        undeliveredSkips += actions.skipped.count
        var finished = takeCompletionIfDone()
        lock.unlock()
        let kept = keepingOne ? actions.start.first : nil
        for step in actions.start.dropFirst(kept == nil ? 0 : 1) { queue.async { self.run(step) } }
        guard !actions.skipped.isEmpty else {
            finished?()
            return kept
        }
        for skip in actions.skipped { onSkip(skip.step, skip.because) }
        lock.lock()
        undeliveredSkips -= actions.skipped.count
        finished = takeCompletionIfDone()
        lock.unlock()
        finished?()
        return kept
    }

    /// Call with `lock` held; call the returned closure after releasing it.
    private func takeCompletionIfDone() -> (() -> Void)? {
        guard state.isFinished, undeliveredSkips == 0, let completion else { return nil }
        self.completion = nil
        let results = state.results.map { $0! }
        return { completion(results) }
    }
}
