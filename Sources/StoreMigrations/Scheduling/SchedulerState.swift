/// The bookkeeping of Kahn's algorithm for one run, kept apart from Dispatch so that every
/// decision is made in one place, under one lock: which steps are ready, which store is busy,
/// what is skipped when a step fails, and when the run is over.
struct SchedulerState {
    /// What the driver must do after a change of state, outside the lock.
    struct Actions {
        var start: [Int] = []
        var skipped: [(step: Int, because: Int?)] = []
    }

    private var steps: StepGraph
    private let maxConcurrent: Int
    private let failurePolicy: FailurePolicy
    private(set) var results: [Scheduler.Result?]
    /// Whether `results` holds a step's result: asked of successors at every step's end, where
    /// reading the optional result would copy it.
    private var ended: [Bool]
    private var ready = ReadySteps()
    private var storeBusy: [Bool]
    private var waitingForStore: [[Int]]
    private var isRunning: [Bool]
    private var running = 0
    private var finished = 0
    private var stopping = false

    init(steps: StepGraph, maxConcurrentStores: Int, failurePolicy: FailurePolicy) {
        self.steps = steps
        self.maxConcurrent = max(1, maxConcurrentStores)
        self.failurePolicy = failurePolicy
        self.results = Array(repeating: nil, count: steps.count)
        self.ended = Array(repeating: false, count: steps.count)
        self.storeBusy = Array(repeating: false, count: steps.storeCount)
        self.waitingForStore = Array(repeating: [], count: steps.storeCount)
        self.isRunning = Array(repeating: false, count: steps.count)
    }

    mutating func start() -> Actions {
        for step in steps.order.initiallyReady { ready.insert(step) }
        var actions = Actions()
        startReadySteps(&actions)
        return actions
    }

    mutating func finish(_ step: Int, with result: Scheduler.Result) -> Actions {
        var actions = Actions()
        record(result, for: step)
        running -= 1
        isRunning[step] = false
        let store = steps.stores[step]
        storeBusy[store] = false
        for waiting in waitingForStore[store] { ready.insert(waiting) }
        waitingForStore[store].removeAll()
        switch result.outcome {
        case .failed:
            skipDependents(of: step, &actions)
            if failurePolicy == .stopOnFirstFailure { stop(&actions) }
        case .stoppedShort:
            skipDependents(of: step, &actions)
        case .cancelled:
            stop(&actions)
        case .applied, .alreadyApplied, .skipped:
            steps.order.complete(step) { successor in
                if !ended[successor] { ready.insert(successor) }
            }
        }
        startReadySteps(&actions)
        return actions
    }

    mutating func cancel() -> Actions {
        var actions = Actions()
        stop(&actions)
        return actions
    }

    /// Whether every step has a result and none is running.
    var isFinished: Bool { finished == steps.count && running == 0 }

    private mutating func startReadySteps(_ actions: inout Actions) {
        while running < maxConcurrent, !stopping, let step = ready.popFirst() {
            let store = steps.stores[step]
            if storeBusy[store] {
                waitingForStore[store].append(step)
                continue
            }
            storeBusy[store] = true
            running += 1
            isRunning[step] = true
            actions.start.append(step)
        }
    }

    private mutating func skipDependents(of failed: Int, _ actions: inout Actions) {
        var stack = Array(steps.order.successors(of: failed))
        while let step = stack.popLast() {
            guard !ended[step] else { continue }
            record(Scheduler.Result(outcome: .skipped(because: failed)), for: step)
            actions.skipped.append((step, failed))
            stack.append(contentsOf: steps.order.successors(of: step))
        }
    }

    /// Starts nothing new; every step neither finished nor running ends as cancelled.
    private mutating func stop(_ actions: inout Actions) {
        guard !stopping else { return }
        stopping = true
        ready.removeAll()
        for index in waitingForStore.indices { waitingForStore[index].removeAll() }
        for step in 0..<steps.count where !ended[step] && !isRunning[step] {
            record(Scheduler.Result(outcome: .cancelled), for: step)
            actions.skipped.append((step, nil))
        }
    }

    private mutating func record(_ result: Scheduler.Result, for step: Int) {
        results[step] = result
        ended[step] = true
        finished += 1
    }
}
