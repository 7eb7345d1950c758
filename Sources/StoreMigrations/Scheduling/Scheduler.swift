import Dispatch
import Foundation

/// Runs a plan's steps on Dispatch with Kahn's algorithm: a step is dispatched to a concurrent
/// queue once its predecessors are done, at most one step per store at a time and at most
/// `maxConcurrentStores` at once, ready steps starting in plan order.
///
/// A failed step's transitive dependents are skipped; independent work goes on unless the
/// failure policy says to stop. Cancelling starts nothing new; running steps finish.
final class Scheduler: @unchecked Sendable {
    /// How a step ended.
    enum Outcome: Sendable {
        case succeeded(StoreApplyOutcome)
        case failed(any Error)
        case skipped(because: Int)
        case cancelled
    }

    struct Result: Sendable {
        var outcome: Outcome
        var startedAt: Date?
        var duration: TimeInterval?
    }

    private let steps: [ExecutablePlan.Step]
    private let maxConcurrent: Int
    private let failurePolicy: FailurePolicy
    private let execute: @Sendable (Int) -> Result
    private let onSkip: @Sendable (_ step: Int, _ because: Int?) -> Void
    private let queue = DispatchQueue(label: "StoreMigrations.Scheduler", qos: .userInitiated, attributes: .concurrent)

    // Everything below is guarded by `lock`; steps run outside it.
    private let lock = NSLock()
    private var remainingPredecessors: [Int]
    private var results: [Result?]
    private var ready = ReadySteps()
    private var storeBusy: [Bool]
    private var waitingForStore: [[Int]]
    private var running = 0
    private var isRunning: [Bool]
    private var finished = 0
    private var stopping = false
    private var completion: (@Sendable ([Result]) -> Void)?
    /// Skips not yet told to `onSkip`, which is called outside the lock so that an observer may
    /// call back into the run (to cancel it, say) without deadlocking.
    private var unannouncedSkips: [(step: Int, because: Int?)] = []

    /// - Parameters:
    ///   - execute: Runs one step and says how it ended; called on the scheduler's queue.
    ///   - onSkip: Told of each step that will not run, with the failed step it depended on
    ///     (`nil` when the run was cancelled or stopped).
    init(
        steps: [ExecutablePlan.Step], storeCount: Int, maxConcurrentStores: Int, failurePolicy: FailurePolicy,
        execute: @escaping @Sendable (Int) -> Result,
        onSkip: @escaping @Sendable (_ step: Int, _ because: Int?) -> Void
    ) {
        self.steps = steps
        self.maxConcurrent = max(1, maxConcurrentStores)
        self.failurePolicy = failurePolicy
        self.execute = execute
        self.onSkip = onSkip
        self.remainingPredecessors = steps.map(\.predecessorCount)
        self.results = Array(repeating: nil, count: steps.count)
        self.storeBusy = Array(repeating: false, count: storeCount)
        self.isRunning = Array(repeating: false, count: steps.count)
        self.waitingForStore = Array(repeating: [], count: storeCount)
    }

    /// Starts the run; `completion` receives every step's result, in plan order, on a thread of
    /// the scheduler's queue.
    func start(completion: @escaping @Sendable ([Result]) -> Void) {
        lock.lock()
        self.completion = completion
        for step in steps.indices where remainingPredecessors[step] == 0 { ready.insert(step) }
        dispatchReadySteps()
        let skips = unannouncedSkips
        unannouncedSkips.removeAll()
        let done = takeCompletionIfDone()
        lock.unlock()
        for skip in skips { onSkip(skip.step, skip.because) }
        done?()
    }

    /// Starts nothing new; steps already running finish, the others end as cancelled.
    func cancel() {
        lock.lock()
        stopStartingSteps()
        let skips = unannouncedSkips
        unannouncedSkips.removeAll()
        let done = takeCompletionIfDone()
        lock.unlock()
        for skip in skips { onSkip(skip.step, skip.because) }
        done?()
    }

    private func run(_ step: Int) {
        let result = execute(step)
        lock.lock()
        record(result, for: step)
        running -= 1
        isRunning[step] = false
        let store = steps[step].store
        storeBusy[store] = false
        for waiting in waitingForStore[store] { ready.insert(waiting) }
        waitingForStore[store].removeAll()
        switch result.outcome {
        case .failed:
            skipDependents(of: step)
            if failurePolicy == .stopOnFirstFailure { stopStartingSteps() }
        case .cancelled:
            stopStartingSteps()
        case .succeeded, .skipped:
            for successor in steps[step].successors {
                remainingPredecessors[successor] -= 1
                if remainingPredecessors[successor] == 0, results[successor] == nil, !stopping {
                    ready.insert(successor)
                }
            }
        }
        dispatchReadySteps()
        let skips = unannouncedSkips
        unannouncedSkips.removeAll()
        let done = takeCompletionIfDone()
        lock.unlock()
        for skip in skips { onSkip(skip.step, skip.because) }
        done?()
    }

    /// Call with `lock` held.
    private func dispatchReadySteps() {
        while running < maxConcurrent, !stopping, let step = ready.popFirst() {
            let store = steps[step].store
            if storeBusy[store] {
                waitingForStore[store].append(step)
                continue
            }
            storeBusy[store] = true
            running += 1
            isRunning[step] = true
            queue.async { self.run(step) }
        }
    }

    /// Marks every transitive dependent of `failed` as skipped. Call with `lock` held.
    private func skipDependents(of failed: Int) {
        var stack = steps[failed].successors
        while let step = stack.popLast() {
            guard results[step] == nil else { continue }
            record(Result(outcome: .skipped(because: failed)), for: step)
            unannouncedSkips.append((step, failed))
            stack.append(contentsOf: steps[step].successors)
        }
    }

    /// Call with `lock` held.
    private func stopStartingSteps() {
        guard !stopping else { return }
        stopping = true
        ready.removeAll()
        for index in waitingForStore.indices { waitingForStore[index].removeAll() }
        for step in steps.indices where results[step] == nil && !isRunning[step] {
            record(Result(outcome: .cancelled), for: step)
            unannouncedSkips.append((step, nil))
        }
    }

    /// Call with `lock` held.
    private func record(_ result: Result, for step: Int) {
        results[step] = result
        finished += 1
    }

    /// Call with `lock` held; run the returned closure after unlocking.
    private func takeCompletionIfDone() -> (() -> Void)? {
        guard finished == steps.count, running == 0, let completion else { return nil }
        self.completion = nil
        let results = self.results.map { $0! }
        return { completion(results) }
    }
}
