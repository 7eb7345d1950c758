import Dispatch
import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

@Suite struct SchedulerTests {
    typealias Store = InMemoryStore<[String]>

    /// Counts steps in flight, overall and per store, and remembers the most seen at once.
    final class Overlap: @unchecked Sendable {
        private let lock = NSLock()
        private var current = 0, maximum = 0
        private var perStore: [String: Int] = [:], perStoreMaximum: [String: Int] = [:]
        func enter(_ store: String = "") {
            lock.withLock {
                current += 1
                maximum = max(maximum, current)
                perStore[store, default: 0] += 1
                perStoreMaximum[store] = max(perStoreMaximum[store] ?? 0, perStore[store]!)
            }
        }
        func leave(_ store: String = "") { lock.withLock { current -= 1; perStore[store]! -= 1 } }
        var peak: Int { lock.withLock { maximum } }
        var peakPerStore: [String: Int] { lock.withLock { perStoreMaximum } }
    }

    @Test func independentStoresRunInParallel() throws {
        // Each body waits for the other to have started: both finish only if they overlap.
        let coordinator = MigrationCoordinator(appVersion: "1")
        coordinator.maxConcurrentStores = 2
        let aStarted = DispatchSemaphore(value: 0), bStarted = DispatchSemaphore(value: 0)
        let a = try coordinator.manager("a", store: Store([]))
        let b = try coordinator.manager("b", store: Store([]))
        a.register("1") { log in
            aStarted.signal()
            guard bStarted.waitForEvent() else { throw TestFailure(message: "b never overlapped a") }
            log.append("a")
        }
        b.register("1") { log in
            bStarted.signal()
            guard aStarted.waitForEvent() else { throw TestFailure(message: "a never overlapped b") }
            log.append("b")
        }
        let report = try coordinator.run()
        #expect(report.steps.map(\.outcome) == [.applied, .applied])
        #expect(a.store.contents == ["a"] && b.store.contents == ["b"])
    }

    @Test func aBlockingRunRunsTheFirstStoresStepsOnTheCallingThreadAndTheOthersBesideIt() throws {
        // The calling thread would only wait: it runs store a's chain itself, while b, which a's
        // first body waits for, runs on the coordinator's queue.
        let marker = "SchedulerTests.caller"
        Thread.current.threadDictionary[marker] = true
        defer { Thread.current.threadDictionary.removeObject(forKey: marker) }
        @Sendable func onCaller() -> String { Thread.current.threadDictionary[marker] == nil ? "queue" : "caller" }
        let coordinator = MigrationCoordinator(appVersion: "2")
        coordinator.maxConcurrentStores = 2
        let bStarted = DispatchSemaphore(value: 0)
        let a = try coordinator.manager("a", store: Store([]))
        let b = try coordinator.manager("b", store: Store([]))
        a.register("1") { log in
            guard bStarted.waitForEvent() else { throw TestFailure(message: "b never ran beside a") }
            log.append("a@1 on \(onCaller())")
        }
        a.register("2") { log in log.append("a@2 on \(onCaller())") }
        b.register("1") { log in
            log.append("b@1 on \(onCaller())")
            bStarted.signal()
        }
        let report = try coordinator.run()
        #expect(report.steps.map(\.outcome) == [.applied, .applied, .applied])
        #expect(a.store.contents == ["a@1 on caller", "a@2 on caller"])
        #expect(b.store.contents == ["b@1 on queue"])
    }

    @Test func oneStoreNeverRunsTwoStepsAtOnce() throws {
        let coordinator = MigrationCoordinator(appVersion: "100")
        coordinator.maxConcurrentStores = 4
        let shared = Store([])
        let overlap = Overlap()
        for name in ["a", "b", "c"] {
            let manager = try coordinator.manager(name, store: shared)
            for version in 1...20 {
                manager.register(Version(version)) { log in
                    overlap.enter()
                    defer { overlap.leave() }
                    Thread.sleep(forTimeInterval: 0.0005)
                    log.append("\(name)@\(version)")
                }
            }
        }
        // A second store proves the limit is per store, not global.
        let other = try coordinator.manager("other", store: Store([]))
        let otherRan = DispatchSemaphore(value: 0)
        other.register("1") { _ in otherRan.signal() }
        try coordinator.run()
        #expect(overlap.peak == 1)
        #expect(shared.contents.count == 60)
        for name in ["a", "b", "c"] {
            #expect(shared.contents.filter { $0.hasPrefix("\(name)@") } == (1...20).map { "\(name)@\($0)" })
        }
        #expect(otherRan.wait(timeout: .now()) == .success)
    }

    @Test func maxConcurrentStoresLimitsParallelism() throws {
        let coordinator = MigrationCoordinator(appVersion: "1")
        coordinator.maxConcurrentStores = 1
        let overlap = Overlap()
        for index in 0..<6 {
            try coordinator.manager("s\(index)", store: Store([])).register("1") { _ in
                overlap.enter()
                Thread.sleep(forTimeInterval: 0.002)
                overlap.leave()
            }
        }
        try coordinator.run()
        #expect(overlap.peak == 1)
    }

    /// a: 1, 2 (fails), 3; c: 1 (after a@2), 2; b: 1, 2 independent.
    private func failingSetup(failA2: @escaping @Sendable () -> Bool, log: EventLog) throws -> (MigrationCoordinator, Store, Store, Store) {
        let coordinator = MigrationCoordinator(appVersion: "3")
        let aStore = Store([]), bStore = Store([]), cStore = Store([])
        let a = try coordinator.manager("a", store: aStore)
        let b = try coordinator.manager("b", store: bStore)
        let c = try coordinator.manager("c", store: cStore)
        registerLogging(["1", "3"], on: a, log: log)
        a.register("2") { applied in
            applied.append("a@2 partial")
            if failA2() { throw TestFailure(message: "disk full") }
            log.append("a@2")
        }
        registerLogging(["1", "2"], on: b, log: log)
        registerLogging(["1", "2"], on: c, log: log, dependsOn: ["1": [a.migration("2")]])
        return (coordinator, aStore, bStore, cStore)
    }

    @Test func failureSkipsExactlyItsDependentsAndARerunRetriesIt() throws {
        let log = EventLog()
        let (coordinator, aStore, bStore, cStore) = try failingSetup(failA2: { true }, log: log)
        var caught: MigrationRunError?
        do { try coordinator.run() } catch let error as MigrationRunError { caught = error }
        let report = try #require(caught).report
        let outcomes = Dictionary(uniqueKeysWithValues: report.steps.map { ($0.step.id.description, $0.outcome) })
        #expect(outcomes == [
            "a@1": .applied, "a@2": .failed(message: "disk full"), "a@3": .skipped(because: .init(manager: "a", action: .migrate, version: "2")),
            "b@1": .applied, "b@2": .applied,
            "c@1": .skipped(because: .init(manager: "a", action: .migrate, version: "2")),
            "c@2": .skipped(because: .init(manager: "a", action: .migrate, version: "2")),
        ])
        #expect(aStore.contents == ["a@1"], "the failed body's partial change is not kept")
        #expect(aStore.recordedStates["a"]?.level == "1")
        #expect(bStore.recordedStates["b"]?.level == "2")
        #expect(cStore.recordedStates["c"] == nil)
        #expect(report.managers.map(\.levelAfter) == ["1", "2", nil])
        #expect(caught?.underlyingError as? TestFailure == TestFailure(message: "disk full"))
        #expect(caught?.description == "Migration a@2 on in-memory store failed: disk full. Its level stays at 1; skipped because "
            + "of it: a@3, c@1, c@2. Applied steps stay applied; fix the cause and run again: the next run resumes where this one stopped.")

        let retryLog = EventLog()
        let (retry, _, _, _) = try failingSetup(failA2: { false }, log: retryLog)
        // The retry coordinator uses new stores; carry the first run's stores' states over.
        _ = retry
        let coordinator2 = MigrationCoordinator(appVersion: "3")
        let a = try coordinator2.manager("a", store: aStore)
        let b = try coordinator2.manager("b", store: bStore)
        let c = try coordinator2.manager("c", store: cStore)
        registerLogging(["1", "2", "3"], on: a, log: retryLog)
        registerLogging(["1", "2"], on: b, log: retryLog)
        registerLogging(["1", "2"], on: c, log: retryLog, dependsOn: ["1": [a.migration("2")]])
        #expect(try coordinator2.plan().steps.map(\.id.description) == ["a@2", "a@3", "c@1", "c@2"])
        let second = try coordinator2.run()
        #expect(second.succeeded)
        #expect(aStore.contents == ["a@1", "a@2", "a@3"])
        #expect(cStore.contents == ["c@1", "c@2"])
        #expect(retryLog.all.filter { $0.hasPrefix("b") }.isEmpty)
    }

    @Test func stopOnFirstFailureStartsNothingNew() throws {
        let log = EventLog()
        let (coordinator, _, bStore, _) = try failingSetup(failA2: { true }, log: log)
        coordinator.failurePolicy = .stopOnFirstFailure
        coordinator.maxConcurrentStores = 1
        var caught: MigrationRunError?
        do { try coordinator.run() } catch let error as MigrationRunError { caught = error }
        let report = try #require(caught).report
        // Plan order with one store at a time: a@1, b@1, a@2 (fails), then nothing new starts.
        #expect(report.steps.map(\.step.id.description) == ["a@1", "b@1", "a@2", "b@2", "a@3", "c@1", "c@2"])
        #expect(report.steps.map(\.outcome) == [
            .applied, .applied, .failed(message: "disk full"), .cancelled,
            .skipped(because: .init(manager: "a", action: .migrate, version: "2")),
            .skipped(because: .init(manager: "a", action: .migrate, version: "2")),
            .skipped(because: .init(manager: "a", action: .migrate, version: "2")),
        ])
        #expect(bStore.contents == ["b@1"])
        #expect(caught?.description.contains("1 step was not started") == true)
    }

    @Test func cancellationLetsRunningStepsFinishAndStartsNothingNew() throws {
        let coordinator = MigrationCoordinator(appVersion: "2")
        coordinator.maxConcurrentStores = 1
        let started = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let store = Store([])
        let a = try coordinator.manager("a", store: store)
        a.register("1") { log in
            started.signal()
            _ = release.waitForEvent()
            log.append("a@1")
        }
        registerLogging(["2"], on: a)
        registerLogging(["1"], on: try coordinator.manager("b", store: Store([])))
        let done = DispatchSemaphore(value: 0)
        let result = ResultBox()
        let handle = coordinator.run(queue: DispatchQueue(label: "test")) { outcome in
            result.set(outcome)
            done.signal()
        }
        #expect(started.waitForEvent())
        handle.cancel()
        release.signal()
        #expect(done.waitForEvent())
        let report = try #require(result.error as? MigrationRunError, "\(String(describing: result.report))").report
        #expect(report.steps.map(\.outcome) == [.applied, .cancelled, .cancelled])
        #expect(store.contents == ["a@1"])
        #expect(store.recordedStates["a"]?.level == "1")
        #expect(handle.progress.isCancelled == false)
    }

    @Test func cancellingTheParentProgressCancelsABlockingRun() throws {
        let coordinator = MigrationCoordinator(appVersion: "2")
        let parent = Progress(totalUnitCount: 1)
        let store = Store([])
        let a = try coordinator.manager("a", store: store)
        a.register("1") { log in
            parent.cancel()
            log.append("a@1")
        }
        registerLogging(["2"], on: a)
        parent.becomeCurrent(withPendingUnitCount: 1)
        defer { parent.resignCurrent() }
        #expect(throws: MigrationRunError.self) { try coordinator.run() }
        #expect(store.contents == ["a@1"])
    }

    @Test func asyncRunReturnsTheReport() async throws {
        let coordinator = MigrationCoordinator(appVersion: "2")
        let store = Store([])
        registerLogging(["1", "2"], on: try coordinator.manager("a", store: store))
        let report = try await coordinator.run()
        #expect(report.steps.map(\.outcome) == [.applied, .applied])
        #expect(store.contents == ["a@1", "a@2"])
    }

    @Test func asyncRunThrowsPlanningErrors() async throws {
        let coordinator = MigrationCoordinator(appVersion: "2")
        let store = Store([])
        registerLogging(["1", "1.0"], on: try coordinator.manager("a", store: store))
        await #expect(throws: MigrationError.duplicateMigration(manager: "a", version: "1", alsoRegisteredAs: "1.0")) { try await coordinator.run() }
    }

    @Test func taskCancellationCancelsTheRun() async throws {
        let coordinator = MigrationCoordinator(appVersion: "2")
        coordinator.maxConcurrentStores = 1
        let started = DispatchSemaphore(value: 0)
        let store = Store([])
        let a = try coordinator.manager("a", store: store)
        a.register("1") { log, context in
            started.signal()
            while !context.isCancelled { Thread.sleep(forTimeInterval: 0.001) }
            try context.checkCancellation()
        }
        registerLogging(["2"], on: a)
        let task = Task { try await coordinator.run() }
        _ = await Task.detached { started.waitForEvent() }.value
        task.cancel()
        let error = await #expect(throws: MigrationRunError.self) { try await task.value }
        #expect(error?.report.steps.map(\.outcome) == [.failed(message: "CancellationError()"), .cancelled])
        #expect(store.recordedStates["a"] == nil)
    }

    @Test func completionArrivesOnTheGivenQueue() throws {
        let coordinator = MigrationCoordinator(appVersion: "1")
        registerLogging(["1"], on: try coordinator.manager("a", store: Store([])))
        let queue = DispatchQueue(label: "completion")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 42)
        let done = DispatchSemaphore(value: 0)
        let onQueue = ResultBox()
        coordinator.run(queue: queue) { result in
            onQueue.flag = DispatchQueue.getSpecific(key: key) == 42
            onQueue.set(result)
            done.signal()
        }
        #expect(done.waitForEvent())
        #expect(onQueue.flag)
        #expect(onQueue.report?.didRunAnything == true)
    }

    // MARK: Limits, failures and cancellation

    @Test(arguments: 1...4)
    func manyManagersSharingStoresRespectEveryLimit(maxConcurrent: Int) throws {
        let coordinator = MigrationCoordinator(appVersion: "5")
        coordinator.maxConcurrentStores = maxConcurrent
        let overlap = Overlap()
        let order = EventLog()
        let stores = (0..<5).map { Store([], name: "store \($0)") }
        var managers: [MigrationManager<Store>] = []
        for index in 0..<15 {
            let store = stores[index % stores.count]
            let manager = try coordinator.manager("m\(index)", store: store)
            for version in 1...5 {
                // Each manager's 3 waits for the previous manager's 2: a web across stores.
                let dependencies = version == 3 && index > 0 ? [managers[index - 1].migration("2")] : []
                let name = manager.name, storeName = store.description
                manager.register(Version(version), dependsOn: dependencies) { applied in
                    overlap.enter(storeName)
                    defer { overlap.leave(storeName) }
                    Thread.sleep(forTimeInterval: 0.0002)
                    applied.append("\(name)@\(version)")
                    order.append("\(name)@\(version)")
                }
            }
            managers.append(manager)
        }
        let report = try coordinator.run()
        #expect(report.steps.count == 75 && report.succeeded)
        #expect(overlap.peak <= maxConcurrent)
        #expect(overlap.peakPerStore.values.allSatisfy { $0 == 1 })
        let position = Dictionary(uniqueKeysWithValues: order.all.enumerated().map { ($0.element, $0.offset) })
        #expect(position.count == 75)
        for index in 0..<15 {
            for version in 2...5 { #expect(position["m\(index)@\(version - 1)"]! < position["m\(index)@\(version)"]!) }
            if index > 0 { #expect(position["m\(index - 1)@2"]! < position["m\(index)@3"]!) }
        }
        if maxConcurrent == 1 {
            #expect(order.all == report.steps.map(\.step.id.description), "one at a time, steps run in plan order")
        }
    }

    @Test func failureSkipsTransitiveDependentsAcrossStoresWithTheExactCause() throws {
        let coordinator = MigrationCoordinator(appVersion: "3")
        let a = try coordinator.manager("a", store: Store([]))
        let b = try coordinator.manager("b", store: Store([]))
        let c = try coordinator.manager("c", store: Store([]))
        let d = try coordinator.manager("d", store: Store([]))
        let e = try coordinator.manager("e", store: Store([]))
        registerLogging(["1"], on: a)
        a.register("2") { _ in throw TestFailure(message: "a@2 broke") }
        registerLogging(["1", "2"], on: b, dependsOn: ["2": [a.migration("2")]])
        registerLogging(["1", "1-1", "2"], on: c, dependsOn: ["1-1": [b.migration("2")]])
        registerLogging(["1"], on: d, dependsOn: ["1": [c.migration("2"), e.migration("1")]])
        d.onAppVersionChange { _, _ in Issue.record("a skipped manager's hook must not run") }
        registerLogging(["1", "2"], on: e)
        let report = try runReport(of: coordinator)
        let cause = stepID("a", "2")
        let outcomes = Dictionary(uniqueKeysWithValues: report.steps.map { ($0.step.id.description, $0.outcome) })
        #expect(outcomes == [
            "a@1": .applied, "a@2": .failed(message: "a@2 broke"),
            "b@1": .applied, "b@2": .skipped(because: cause),
            "c@1": .applied, "c@1-1": .skipped(because: cause), "c@2": .skipped(because: cause),
            "d@1": .skipped(because: cause), "d:appVersionChange@3": .skipped(because: cause),
            "e@1": .applied, "e@2": .applied,
        ])
        #expect(report.managers.map(\.levelAfter) == ["1", "1", "1", nil, "2"])
        #expect(MigrationRunError(report: report).description.contains("skipped because of it: b@2, c@1-1, c@2, d@1, d:appVersionChange@3."))
    }

    @Test func stopOnFirstFailureLetsTheOtherRunningStepFinish() throws {
        let coordinator = MigrationCoordinator(appVersion: "2")
        coordinator.maxConcurrentStores = 2
        coordinator.failurePolicy = .stopOnFirstFailure
        let bStarted = DispatchSemaphore(value: 0), stopped = DispatchSemaphore(value: 0)
        let events = EventLog()
        coordinator.observer = { event in
            events.append(describe(event))
            // Told after the scheduler recorded the failure and stopped.
            if case .skipped(let step, _) = event, step.id == stepID("a", "2") { stopped.signal() }
        }
        let a = try coordinator.manager("a", store: Store([]))
        let b = try coordinator.manager("b", store: Store([]))
        a.register("1") { _ in
            guard bStarted.waitForEvent() else { throw TestFailure(message: "b@1 never ran alongside") }
            throw TestFailure(message: "a@1 broke")
        }
        registerLogging(["2"], on: a)
        b.register("1") { applied in
            bStarted.signal()
            guard stopped.waitForEvent() else { throw TestFailure(message: "the run never stopped") }
            applied.append("b@1")
        }
        registerLogging(["2"], on: b)
        registerLogging(["1"], on: try coordinator.manager("c", store: Store([])))
        let report = try runReport(of: coordinator)
        #expect(report.steps.map(\.step.id.description) == ["a@1", "b@1", "c@1", "a@2", "b@2"])
        #expect(report.steps.map(\.outcome) == [.failed(message: "a@1 broke"), .applied, .cancelled, .skipped(because: stepID("a", "1")), .cancelled])
        #expect(b.store.contents == ["b@1"])
        // (The cancelled steps' .skipped events may arrive after the run: see ObservabilityTests.everyEventArrivesBeforeTheRunCompletes.)
        #expect(events.all.filter { $0.hasPrefix("started") }.sorted() == ["started a@1", "started b@1"])
    }

    @Test func cancellingBeforeTheRunStartsRunsNothing() async throws {
        let coordinator = MigrationCoordinator(appVersion: "2")
        let store = Store([])
        registerLogging(["1", "2"], on: try coordinator.manager("a", store: store))
        registerLogging(["1"], on: try coordinator.manager("b", store: Store([])))
        let task = Task {
            while !Task.isCancelled { await Task.yield() }
            return try await coordinator.run()
        }
        task.cancel()
        let error = await #expect(throws: MigrationRunError.self) { try await task.value }
        #expect(error?.report.steps.map(\.outcome) == [.cancelled, .cancelled, .cancelled])
        #expect(error?.report.didRunAnything == false)
        #expect(store.contents.isEmpty && store.recordedStates.isEmpty)
        #expect(error?.description.contains("3 steps were not started") == true)
    }

    @Test func cancellingFromInsideAnEventStartsNothingNew() throws {
        let coordinator = MigrationCoordinator(appVersion: "2")
        coordinator.maxConcurrentStores = 1
        let box = HandleBox()
        let events = EventLog()
        coordinator.observer = { event in
            events.append(describe(event))
            if case .finished(let step, _) = event, step.id == stepID("a", "1") { box.get()?.cancel() }
        }
        let a = try coordinator.manager("a", store: Store([]))
        registerLogging(["1", "2"], on: a)
        registerLogging(["1"], on: try coordinator.manager("b", store: Store([])))
        let result = try runWithHandle(coordinator, box: box)
        let report = try #require((result.failure as? MigrationRunError)?.report)
        #expect(report.steps.map(\.step.id.description) == ["a@1", "b@1", "a@2"])
        #expect(report.steps.map(\.outcome) == [.applied, .cancelled, .cancelled])
        #expect(events.all == ["planned 3", "started a@1", "finished a@1", "skipped b@1 because cancelled", "skipped a@2 because cancelled"])
        #expect(a.store.contents == ["a@1"])
    }

    @Test
    func cancellingFromThePlannedEventTellsTheObserverOfEveryStep() throws {
        let coordinator = MigrationCoordinator(appVersion: "1")
        coordinator.maxConcurrentStores = 1
        let box = HandleBox()
        let events = EventLog()
        coordinator.observer = { event in
            events.append(describe(event))
            if case .planned = event { box.get()?.cancel() }
        }
        for name in ["a", "b", "c"] { registerLogging(["1"], on: try coordinator.manager(name, store: Store([]))) }
        let result = try runWithHandle(coordinator, box: box)
        let report = try #require((result.failure as? MigrationRunError)?.report)
        #expect(report.steps.map(\.outcome) == [.cancelled, .cancelled, .cancelled])
        #expect(events.all.first == "planned 3")
        #expect(events.all.dropFirst().sorted() == ["skipped a@1 because cancelled", "skipped b@1 because cancelled", "skipped c@1 because cancelled"])
    }

    @Test func cancellingAfterTheRunChangesNothing() throws {
        let coordinator = MigrationCoordinator(appVersion: "1")
        let store = Store([])
        registerLogging(["1"], on: try coordinator.manager("a", store: store))
        let box = HandleBox()
        let result = try runWithHandle(coordinator, box: box)
        let report = try result.get()
        box.get()?.cancel()
        box.get()?.cancel()
        #expect(report.succeeded && report.steps.map(\.outcome) == [.applied])
        #expect(box.get()?.progress.fractionCompleted == 1)
        #expect(store.contents == ["a@1"])
        #expect(try coordinator.run().steps.isEmpty)
    }

    // MARK: Two runs on one store

    @Test func twoRunsOnOneStoreApplyEachMigrationOnce() throws {
        // Two coordinators (as two launches racing, or an app and its extension) on the same stores.
        let prefs = Store([]), library = Store([])
        let bodies = EventLog()
        func coordinator() throws -> MigrationCoordinator {
            let coordinator = MigrationCoordinator(appVersion: "3")
            let p = try coordinator.manager("prefs", store: prefs)
            let l = try coordinator.manager("library", store: library)
            for version in 1...3 {
                p.register(Version(version)) { applied in
                    applied.append("prefs@\(version)")
                    bodies.append("prefs@\(version)")
                }
                l.register(Version(version), dependsOn: [p.migration(Version(version))]) { applied in
                    applied.append("library@\(version)")
                    bodies.append("library@\(version)")
                }
            }
            return coordinator
        }
        let coordinators = [try coordinator(), try coordinator()]
        let reports = ResultBox()
        let outcomes = EventLog()
        DispatchQueue.concurrentPerform(iterations: 2) { index in
            do {
                let report = try coordinators[index].run()
                for step in report.steps { outcomes.append("\(step.step.id) \(step.outcome == .applied ? "applied" : "\(step.outcome)")") }
            } catch {
                reports.set(.failure(error))
            }
        }
        #expect(reports.error == nil)
        #expect(bodies.all.count == 6)
        #expect(prefs.contents == ["prefs@1", "prefs@2", "prefs@3"])
        #expect(library.contents == ["library@1", "library@2", "library@3"])
        // The second run either finds the work done when it plans, or each step already applied.
        #expect(outcomes.all.filter { $0.hasSuffix(" applied") }.count == 6)
        #expect(outcomes.all.allSatisfy { $0.hasSuffix(" applied") || $0.contains("alreadyApplied") })
    }
}

private extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
