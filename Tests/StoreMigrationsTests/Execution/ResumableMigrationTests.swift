import Dispatch
import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

/// Resumable migrations through the coordinator, on a store whose content counts how many times
/// each unit was processed: batches commit with their cursor, failures and budgets resume where
/// the last committed batch ended, deferred work runs in the background, pauses hold it.
@Suite struct ResumableMigrationTests {
    static let units = 1_000

    /// A batch body over `units` counters: processes `limit` units after the cursor (a unit
    /// index), failing at unit `failAt` (once) if given.
    static func counting(
        failAt: Int? = nil, failures: Locked<Int> = Locked(0), batchCalls: Locked<Int> = Locked(0)
    ) -> @Sendable (inout [Int], BatchRequest) throws -> BatchResult {
        { counters, batch in
            batchCalls.value += 1
            let start = batch.cursor.flatMap(Int.init) ?? 0
            let end = min(start + batch.limit, counters.count)
            for unit in start..<end {
                if unit == failAt, failures.value == 0 {
                    failures.value += 1
                    throw SimulatedBodyFailure()
                }
                counters[unit] += 1
            }
            if end == counters.count { return .finished(processed: end - start) }
            return .more(cursor: String(end), processed: end - start, total: counters.count)
        }
    }

    static func store() -> InMemoryStore<[Int]> {
        InMemoryStore(Array(repeating: 0, count: units), name: "counters")
    }

    @Test func batchesRunInOrderAndTheMigrationIsAppliedWithTheLast() throws {
        let store = Self.store()
        let coordinator = MigrationCoordinator(appVersion: "2")
        let log = EventLog()
        coordinator.observer = { log.append(describe($0)) }
        let calls = Locked(0)
        try coordinator.manager("data", store: store).registerResumable("2", batchSize: .fixed(300), Self.counting(batchCalls: calls))
        let report = try coordinator.run()
        #expect(report.steps.map(\.outcome) == [.applied])
        #expect(store.contents == Array(repeating: 1, count: Self.units))
        #expect(calls.value == 4)
        #expect(log.all.filter { $0.hasPrefix("batch") } == ["batch data@2 300", "batch data@2 600", "batch data@2 900"])
        let record = try store.readRecords()["data"]!
        #expect(record.appliedVersions == ["2"] && record.inProgress.isEmpty)
    }

    @Test func aFailedBatchKeepsTheCommittedOnesAndTheNextRunResumesAfterThem() throws {
        let store = Self.store()
        let failures = Locked(0)
        func launch() throws -> MigrationReport {
            let coordinator = MigrationCoordinator(appVersion: "2")
            try coordinator.manager("data", store: store)
                .registerResumable("2", batchSize: .fixed(100), Self.counting(failAt: 450, failures: failures))
            return try runReport(of: coordinator)
        }
        let first = try launch()
        #expect(first.failures.map(\.step.id.description) == ["data@2"])
        let progress = try #require(try store.readRecords()["data"]?.progress(of: "2"))
        #expect(progress.cursor == "400" && progress.done == 400 && progress.batches == 4 && progress.total == Self.units)
        // The failed batch's writes are gone with it: units 400..<450 were rolled back.
        #expect(store.contents[..<400].allSatisfy { $0 == 1 } && store.contents[400...].allSatisfy { $0 == 0 })
        let second = try launch()
        #expect(second.steps.map(\.outcome) == [.applied])
        #expect(store.contents == Array(repeating: 1, count: Self.units), "every unit processed exactly once")
        #expect(try store.readRecords()["data"]?.inProgress == [])
    }

    @Test func theBudgetStopsAfterABatchAndTheBackgroundFinishesBeforeTheDependents() throws {
        let store = Self.store()
        let other = InMemoryStore([String](), name: "other")
        let coordinator = MigrationCoordinator(appVersion: "2")
        coordinator.deferredWork = .manual
        let log = EventLog()
        coordinator.observer = { log.append(describe($0)) }
        let data = try coordinator.manager("data", store: store)
        data.registerResumable("2", batchSize: .fixed(100), Self.counting())
        try coordinator.manager("other", store: other).register("2", dependsOn: [data.migration("2")]) { list in
            list.append("ran after data@2")
        }
        let launch = try coordinator.run(launchBudget: .zero)
        #expect(launch.succeeded)
        #expect(launch.steps.map(\.outcome.description) == ["inProgress", "deferred"])
        #expect(try store.readRecords()["data"]?.progress(of: "2")?.batches == 1)
        #expect(other.contents.isEmpty)
        #expect(coordinator.backgroundRun == nil, "deferredWork is manual")

        let background = try coordinator.runDeferred(queue: DispatchQueue(label: "test")).wait()
        #expect(background.steps.map(\.outcome) == [.applied, .applied])
        #expect(store.contents == Array(repeating: 1, count: Self.units))
        #expect(other.contents == ["ran after data@2"])
        #expect(log.all.contains("postponed data@2 100") && log.all.contains("postponed other@2"))
    }

    @Test func aDeferredMigrationAndItsDependentsRunInTheBackgroundAfterTheLaunch() throws {
        let store = Self.store()
        let other = InMemoryStore([String](), name: "other")
        let coordinator = MigrationCoordinator(appVersion: "2")
        let data = try coordinator.manager("data", store: store)
        data.register("1") { counters in counters.append(-1) }
        data.registerResumable("2", batchSize: .fixed(250), deferred: true) { counters, batch in
            try Self.counting()(&counters, batch)
        }
        let independent = try coordinator.manager("other", store: other)
        independent.register("1") { $0.append("independent 1") }
        independent.register("2", dependsOn: [data.migration("2")]) { $0.append("dependent 2") }

        let plan = try coordinator.plan()
        #expect(plan.managers.map(\.deferred) == [["2"], ["2"]])
        #expect(plan.description.contains("data (counters): level none, first launch (runAll), pending 1, 2; deferred 2"))
        #expect(plan.graphviz().contains(#""data@2" [label="data@2\n(deferred)", style=dashed];"#))

        let launch = try coordinator.run()
        #expect(launch.steps.map { "\($0.step.id) \($0.outcome.description)" }
            == ["data@1 applied", "other@1 applied", "data@2 deferred", "other@2 deferred"])
        let handle = try #require(coordinator.backgroundRun)
        let background = try handle.wait()
        #expect(background.steps.map(\.step.id.description) == ["data@2", "other@2"])
        #expect(background.succeeded)
        #expect(store.contents.dropLast() == ArraySlice(Array(repeating: 1, count: Self.units)))
        #expect(other.contents == ["independent 1", "dependent 2"])
        #expect(try coordinator.plan().isUpToDate)
    }

    /// A launch whose every pending step is deferred reports them all postponed, in plan order,
    /// with the events the scheduler would have sent, and runs none.
    @Test func aLaunchWithOnlyDeferredStepsPostponesThemAllInPlanOrder() throws {
        let store = Self.store()
        let other = InMemoryStore([String](), name: "other")
        let coordinator = MigrationCoordinator(appVersion: "2")
        coordinator.deferredWork = .manual
        let log = EventLog()
        coordinator.observer = { log.append(describe($0)) }
        let data = try coordinator.manager("data", store: store)
        data.registerResumable("2", batchSize: .fixed(250), deferred: true, Self.counting())
        try coordinator.manager("other", store: other).register("2", dependsOn: [data.migration("2")]) { $0.append("dependent") }

        let launch = try coordinator.run()
        #expect(launch.steps.map { "\($0.step.id) \($0.outcome.description)" } == ["data@2 deferred", "other@2 deferred"])
        #expect(launch.postponed.map(\.step.id.description) == ["data@2", "other@2"])
        #expect(log.all == ["planned 2", "postponed data@2", "postponed other@2"])
        #expect(store.contents == Array(repeating: 0, count: Self.units))
        #expect(other.contents.isEmpty)
        #expect(try store.readRecords()["data"]?.progress(of: "2") == nil)
    }

    @Test func finishInlineRunsWhatADependentNeedsAtLaunch() throws {
        let store = Self.store()
        let other = InMemoryStore([String](), name: "other")
        let coordinator = MigrationCoordinator(appVersion: "2")
        coordinator.dependentsOfDeferred = .finishInline
        coordinator.deferredWork = .manual
        let data = try coordinator.manager("data", store: store)
        data.registerResumable("2", batchSize: .fixed(500), deferred: true, Self.counting())
        try coordinator.manager("other", store: other).register("2", dependsOn: [data.migration("2")]) { $0.append("dependent") }
        #expect(try coordinator.plan().managers.map(\.deferred) == [[], []])
        let launch = try coordinator.run()
        #expect(launch.steps.map(\.outcome) == [.applied, .applied])
        #expect(other.contents == ["dependent"])
    }

    @Test func aPausedBackgroundRunHoldsBetweenBatchesAndResumes() throws {
        let store = Self.store()
        let coordinator = MigrationCoordinator(appVersion: "2")
        coordinator.deferredWork = .manual
        let firstBatch = DispatchSemaphore(value: 0)
        let handleBox = Locked<MigrationRunHandle?>(nil)
        let handleSet = DispatchSemaphore(value: 0)
        coordinator.observer = { event in
            guard case .batchCommitted(_, let progress) = event, progress.batches == 1 else { return }
            // Called on the step's thread before it asks whether to go on: the pause holds it.
            handleSet.wait()
            handleBox.value?.pause()
            firstBatch.signal()
        }
        try coordinator.manager("data", store: store).registerResumable("2", batchSize: .fixed(100), deferred: true, Self.counting())
        _ = try coordinator.run()
        let handle = coordinator.runDeferred(queue: DispatchQueue(label: "test"))
        handleBox.value = handle
        handleSet.signal()
        #expect(firstBatch.wait(timeout: .now() + 600) == .success)
        #expect(try store.readRecords()["data"]?.progress(of: "2")?.batches == 1)
        #expect(handle.outcome == nil)
        handle.resume()
        #expect(try handle.wait().steps.map(\.outcome) == [.applied])
        #expect(store.contents == Array(repeating: 1, count: Self.units))
    }

    @Test func aCancelledBackgroundRunStopsAfterItsBatchAndTheNextLaunchResumes() throws {
        let store = Self.store()
        let coordinator = MigrationCoordinator(appVersion: "2")
        coordinator.deferredWork = .manual
        let handleBox = Locked<MigrationRunHandle?>(nil)
        let handleSet = DispatchSemaphore(value: 0)
        coordinator.observer = { event in
            guard case .batchCommitted(_, let progress) = event, progress.batches == 3 else { return }
            handleSet.wait()
            handleBox.value?.cancel()
        }
        try coordinator.manager("data", store: store).registerResumable("2", batchSize: .fixed(100), deferred: true, Self.counting())
        _ = try coordinator.run()
        let handle = coordinator.runDeferred(queue: DispatchQueue(label: "test"))
        handleBox.value = handle
        handleSet.signal()
        let error = try #require(throws: MigrationRunError.self) { try handle.wait() }
        #expect(error.report.steps.map(\.outcome.description) == ["cancelled"])
        #expect(try store.readRecords()["data"]?.progress(of: "2")?.done == 300)

        let next = MigrationCoordinator(appVersion: "2")
        next.deferredWork = .manual
        try next.manager("data", store: store).registerResumable("2", batchSize: .fixed(100), deferred: true, Self.counting())
        let plan = try next.plan()
        #expect(plan.managers[0].inProgress.map(\.cursor) == ["300"])
        #expect(plan.description.contains("    in progress 2: 30% (300 of 1000) in 3 batches, resumes after 300"))
        let json = String(decoding: try JSONEncoder().encode(plan), as: UTF8.self)
        #expect(json.contains(#""cursor":"300""#) && json.contains(#""deferred":["2"]"#))
        #expect(try next.runDeferred(queue: DispatchQueue(label: "test")).wait().succeeded)
        #expect(store.contents == Array(repeating: 1, count: Self.units))
    }

    /// A relaunch starts from the batch size the committed batches had learnt, kept with the
    /// cursor, rather than growing from the initial size again (issue 28: restarts of big steps):
    /// its first batch is a quarter of it, so that it commits soon after the launch, and the
    /// next one is back at the learnt size.
    @Test func aResumedStepStartsFromTheBatchSizeItHadLearnt() throws {
        let store = Self.store()
        let limits = Locked<[Int]>([])
        func launch(failing: Bool) throws -> MigrationReport {
            let coordinator = MigrationCoordinator(appVersion: "2")
            let counting = Self.counting()
            try coordinator.manager("data", store: store).registerResumable(
                "2", batchSize: .timeTarget(.seconds(10), initial: 10)) { counters, batch in
                    limits.value.append(batch.limit)
                    if failing, limits.value.count == 3 { throw SimulatedBodyFailure() }
                    return try counting(&counters, batch)
                }
            return try runReport(of: coordinator)
        }
        #expect(try launch(failing: true).failures.map(\.step.id.description) == ["data@2"])
        // Fast batches grow fourfold, the most a batch may: 10, 40, then 160 (which failed).
        #expect(limits.value == [10, 40, 160])
        #expect(try store.readRecords()["data"]?.progress(of: "2")?.batchSize == 160)
        limits.value = []
        #expect(try launch(failing: false).steps.map(\.outcome) == [.applied])
        // 50 units were committed; 40, 160 and 640 more, then the last 110 within 2,560.
        #expect(limits.value == [40, 160, 640, 2_560])
        #expect(store.contents == Array(repeating: 1, count: Self.units))
    }

    @Test func theBatchSizeFollowsTheTimeTarget() {
        let size = BatchSize.timeTarget(.milliseconds(200), initial: 10)
        #expect(size.firstLimit(learnt: nil) == 10)
        #expect(size.firstLimit(learnt: 5_000) == 1_250)
        #expect(size.firstLimit(learnt: 3) == 1)
        #expect(BatchSize.fixed(7).firstLimit(learnt: 5_000) == 7)
        #expect(BatchSize.automatic == .timeTarget(.milliseconds(100), initial: 200))
        // 10 units in 1 ms: 2,000 would take 200 ms, but a batch grows at most fourfold.
        #expect(size.nextLimit(after: 10, processed: 10, seconds: 0.001) == 40)
        // 1,000 units in 1 s: 200 take 200 ms.
        #expect(size.nextLimit(after: 1_000, processed: 1_000, seconds: 1) == 200)
        #expect(BatchSize.fixed(7).nextLimit(after: 7, processed: 7, seconds: 5) == 7)
    }
}

extension MigrationReport.Step.Outcome {
    /// The outcome's case name, for comparing lists of outcomes whose payloads vary.
    var description: String {
        switch self {
        case .applied: return "applied"
        case .alreadyApplied: return "alreadyApplied"
        case .failed: return "failed"
        case .skipped: return "skipped"
        case .cancelled: return "cancelled"
        case .inProgress: return "inProgress"
        case .deferred: return "deferred"
        }
    }
}
