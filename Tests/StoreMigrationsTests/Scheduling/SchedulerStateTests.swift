import Testing
@testable import StoreMigrations

/// The scheduler's decisions without Dispatch: which steps start, which wait for their store,
/// what a failure, a postponed step or a cancellation does to the rest.
@Suite struct SchedulerStateTests {
    struct Failure: Error {}
    typealias State = SchedulerState

    /// Steps 0 and 1 on store 0, step 2 on store 1; 0 → 1, and 1 → 3 on store 1.
    static func state(maxConcurrentStores: Int = 4, policy: FailurePolicy = .continueIndependentWork) -> State {
        State(
            steps: StepGraph(stores: [0, 0, 1, 1], storeCount: 2, edgeFrom: [0, 1], edgeTo: [1, 3]),
            maxConcurrentStores: maxConcurrentStores, failurePolicy: policy)
    }

    static func done(_ value: Int) -> Scheduler.Result { .init(outcome: .applied(level: Version(value))) }

    @Test func readyStepsStartInPlanOrderOneAStore() {
        var state = Self.state()
        #expect(state.start().start == [0, 2])
        // 3 waits for 1, which waits for 0.
        #expect(state.finish(2, with: Self.done(2)).start == [])
        #expect(state.finish(0, with: Self.done(0)).start == [1])
        #expect(state.finish(1, with: Self.done(1)).start == [3])
        #expect(!state.isFinished)
        _ = state.finish(3, with: Self.done(3))
        #expect(state.isFinished)
    }

    @Test func aBusyStoreHoldsItsReadyStepsAndAConcurrencyLimitHoldsTheRest() {
        var state = State(
            steps: StepGraph(stores: [0, 0, 1], storeCount: 2, edgeFrom: [], edgeTo: []),
            maxConcurrentStores: 1, failurePolicy: .continueIndependentWork)
        #expect(state.start().start == [0])
        #expect(state.finish(0, with: Self.done(0)).start == [1])
        #expect(state.finish(1, with: Self.done(1)).start == [2])
    }

    @Test func aFailureSkipsItsTransitiveDependentsAndIndependentWorkGoesOn() {
        var state = Self.state()
        _ = state.start()
        let actions = state.finish(0, with: .init(outcome: .failed(Failure())))
        #expect(actions.skipped.map(\.step) == [1, 3] && actions.skipped.allSatisfy { $0.because == 0 })
        #expect(!state.isFinished, "step 2 still runs")
        _ = state.finish(2, with: Self.done(2))
        #expect(state.isFinished)
    }

    @Test func stopOnFirstFailureCancelsWhatHasNotStarted() {
        var state = State(
            steps: StepGraph(stores: [0, 1, 1], storeCount: 2, edgeFrom: [], edgeTo: []),
            maxConcurrentStores: 1, failurePolicy: .stopOnFirstFailure)
        #expect(state.start().start == [0])
        let actions = state.finish(0, with: .init(outcome: .failed(Failure())))
        #expect(actions.start == [] && actions.skipped.map(\.step) == [1, 2] && actions.skipped.allSatisfy { $0.because == nil })
        #expect(state.isFinished)
    }

    @Test func aPostponedStepSkipsItsDependentsWithoutStoppingTheRun() {
        var state = State(
            steps: StepGraph(stores: [0, 0, 1, 1], storeCount: 2, edgeFrom: [0, 1], edgeTo: [1, 3]),
            maxConcurrentStores: 4, failurePolicy: .stopOnFirstFailure)
        #expect(state.start().start == [0, 2])
        let actions = state.finish(0, with: .init(outcome: .stoppedShort(.deferred)))
        #expect(actions.skipped.map(\.step) == [1, 3] && actions.skipped.allSatisfy { $0.because == 0 })
        #expect(!state.isFinished, "a postponed step is no failure: step 2 goes on")
        _ = state.finish(2, with: Self.done(2))
        #expect(state.isFinished)
    }
}
