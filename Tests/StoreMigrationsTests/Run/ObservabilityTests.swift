import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

@Suite struct ObservabilityTests {
    typealias Store = InMemoryStore<[String]>

    @Test func observerSeesEveryEventInOrder() throws {
        let coordinator = MigrationCoordinator(appVersion: "2")
        coordinator.maxConcurrentStores = 1
        let log = EventLog()
        coordinator.observer = { event in log.append(describe(event)) }
        let a = try coordinator.manager("a", store: Store([]))
        a.register("1") { _, context in
            context.reportProgress(completed: 1, of: 4)
            context.reportProgress(0.5)
        }
        a.register("2") { _ in throw TestFailure(message: "boom") }
        a.register("2-1") { _ in }
        #expect(throws: MigrationRunError.self) { try coordinator.run() }
        #expect(log.all == [
            "planned 3",
            "started a@1", "progress a@1 0.25", "progress a@1 0.5", "finished a@1",
            "started a@2", "failed a@2: boom", "skipped a@2-1 because a@2",
        ])
    }

    @Test func progressHasAChildPerStepAndCompletes() throws {
        let coordinator = MigrationCoordinator(appVersion: "2")
        coordinator.maxConcurrentStores = 1
        let parent = Progress(totalUnitCount: 10)
        let seen = EventLog()
        let a = try coordinator.manager("a", store: Store([]))
        a.register("1") { _, context in
            context.reportProgress(0.5)
            seen.append("step \(context.progress.fractionCompleted)")
            seen.append("run \(parent.fractionCompleted)")
        }
        registerLogging(["2"], on: a)
        registerLogging(["1", "2"], on: try coordinator.manager("b", store: Store([])))
        parent.becomeCurrent(withPendingUnitCount: 10)
        try coordinator.run()
        parent.resignCurrent()
        // Halfway through the first of four steps, under a parent that gave the run all its units.
        #expect(seen.all == ["step 0.5", "run 0.125"])
        #expect(parent.fractionCompleted == 1)
        #expect(parent.completedUnitCount == 10)
    }

    @Test func runHandleProgressFinishesWithTheRun() throws {
        let coordinator = MigrationCoordinator(appVersion: "1")
        registerLogging(["1"], on: try coordinator.manager("a", store: Store([])))
        let done = DispatchSemaphore(value: 0)
        let handle = coordinator.run(queue: DispatchQueue(label: "test")) { _ in done.signal() }
        #expect(done.waitForEvent())
        #expect(handle.progress.fractionCompleted == 1)
    }

    @Test func reportDescribesTheRun() throws {
        let coordinator = MigrationCoordinator(appVersion: "2")
        let store = Store([], records: ["a": MigrationRecord(baseline: "1")])
        registerLogging(["1", "2"], on: try coordinator.manager("a", store: store))
        let report = try coordinator.run()
        let lines = report.description.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines[0].hasPrefix("Migration to app version 2: 1 of 1 step applied in "))
        #expect(lines[1].hasPrefix("  a@2: applied in "))
        #expect(lines[2] == "  a: level 1 → 2")
        let upToDate = try coordinator.run().description
        #expect(upToDate.hasPrefix("Migration to app version 2: nothing to do in "))
        #expect(upToDate.hasSuffix("  a: level 2"))
    }

    @Test func reportRoundTripsThroughJSON() throws {
        let coordinator = MigrationCoordinator(appVersion: "2")
        let a = try coordinator.manager("a", store: Store([]))
        registerLogging(["1"], on: a)
        a.register("2") { _ in throw TestFailure(message: "boom") }
        var report: MigrationReport?
        do { try coordinator.run() } catch let error as MigrationRunError { report = error.report }
        let original = try #require(report)
        let decoded = try JSONDecoder().decode(MigrationReport.self, from: try JSONEncoder().encode(original))
        #expect(decoded.steps.map(\.outcome) == [.applied, .failed(message: "boom")])
        #expect(decoded.steps.map(\.step) == original.steps.map(\.step))
        #expect(decoded.managers == original.managers)
        #expect(decoded.steps[1].error == nil && original.steps[1].error != nil)
        #expect(decoded.description == original.description)
    }

    // MARK: Levels in the report

    @Test func levelAfterForEveryOutcome() throws {
        let coordinator = MigrationCoordinator(appVersion: "2")
        let appliedStore = Store([]), failedStore = Store([]), skippedStore = Store([], records: ["skipped": MigrationRecord(baseline: "0.5")])
        let writerStore = Store([]), racedStore = Store([])
        let applied = try coordinator.manager("applied", store: appliedStore)
        registerLogging(["1", "2"], on: applied)
        let failed = try coordinator.manager("failed", store: failedStore)
        registerLogging(["1"], on: failed)
        failed.register("2") { _ in throw TestFailure(message: "boom") }
        registerLogging(["0.5", "1"], on: try coordinator.manager("skipped", store: skippedStore), dependsOn: ["1": [failed.migration("2")]])
        // writer@1's body plays another process that migrates "raced" to 2 first.
        let writer = try coordinator.manager("writer", store: writerStore)
        writer.register("1") { _ in try racedStore.updateRecord(of: "raced") { $0.setBaseline("2") } }
        registerLogging(["1", "2"], on: try coordinator.manager("raced", store: racedStore), dependsOn: ["1": [writer.migration("1")]])
        let baseline = try coordinator.manager("baseline", store: Store([]))
        baseline.firstLaunchPolicy = .baseline
        let resetStore = Store(["v9"], records: ["reset": MigrationRecord(baseline: "9")], rebuiltValue: [])
        let reset = try coordinator.manager("reset", store: resetStore)
        reset.newerStorePolicy = .reset
        registerLogging(["1"], on: reset)
        let emptyResetStore = Store(["v9"], records: ["emptyReset": MigrationRecord(baseline: "9")], rebuiltValue: [])
        try coordinator.manager("emptyReset", store: emptyResetStore).newerStorePolicy = .reset
        let ignored = try coordinator.manager("ignored", store: Store([], records: ["ignored": MigrationRecord(baseline: "9")]))
        ignored.newerStorePolicy = .ignore
        let hooked = try coordinator.manager("hooked", store: Store([], records: ["hooked": MigrationRecord(baseline: "2", appVersion: "1")]))
        registerLogging(["2"], on: hooked)
        hooked.onAppVersionChange { _, _ in }

        let report = try runReport(of: coordinator)
        let outcomes = Dictionary(uniqueKeysWithValues: report.steps.map { ($0.step.id.description, $0.outcome) })
        #expect(outcomes == [
            "applied@1": .applied, "applied@2": .applied,
            "failed@1": .applied, "failed@2": .failed(message: "boom"),
            "skipped@1": .skipped(because: stepID("failed", "2")),
            "writer@1": .applied, "raced@1": .alreadyApplied(level: "2"), "raced@2": .alreadyApplied(level: "2"),
            "baseline:baseline@2": .applied,
            "reset:reset": .applied, "reset@1": .applied, "emptyReset:reset": .applied,
            "hooked:appVersionChange@2": .applied,
        ])
        let levels = Dictionary(uniqueKeysWithValues: report.managers.map { ($0.name, [$0.levelBefore, $0.levelAfter]) })
        #expect(levels == [
            "applied": [nil, "2"], "failed": [nil, "1"], "skipped": ["0.5", "0.5"], "writer": [nil, "1"], "raced": [nil, "2"],
            "baseline": [nil, "2"], "reset": ["9", "1"], "emptyReset": ["9", nil], "ignored": ["9", "9"], "hooked": ["2", "2"],
        ])
        #expect(!report.succeeded && report.didRunAnything)
        // The report's levels are what the stores hold.
        #expect(appliedStore.recordedStates["applied"]?.level == "2")
        #expect(failedStore.recordedStates["failed"]?.level == "1")
        #expect(racedStore.recordedStates["raced"]?.level == "2" && racedStore.contents.isEmpty)
        #expect(emptyResetStore.recordedStates["emptyReset"] == nil && emptyResetStore.contents.isEmpty)
        #expect(resetStore.contents == ["reset@1"])

        let decoded = try JSONDecoder().decode(MigrationReport.self, from: try JSONEncoder().encode(report))
        #expect(decoded.steps.map(\.outcome) == report.steps.map(\.outcome))
        #expect(decoded.steps.map(\.step) == report.steps.map(\.step))
        #expect(decoded.managers == report.managers)
        #expect(decoded.description == report.description)
        #expect(decoded.succeeded == report.succeeded && decoded.didRunAnything == report.didRunAnything)
    }

    @Test func levelAfterOfCancelledAndStoppedSteps() throws {
        let coordinator = MigrationCoordinator(appVersion: "3")
        coordinator.maxConcurrentStores = 1
        coordinator.failurePolicy = .stopOnFirstFailure
        let a = try coordinator.manager("a", store: Store([], records: ["a": MigrationRecord(baseline: "1")]))
        registerLogging(["1", "2"], on: a)
        a.register("3") { _ in throw TestFailure(message: "boom") }
        registerLogging(["1", "2", "3"], on: try coordinator.manager("b", store: Store([])), dependsOn: ["2": [a.migration("2")]])
        let report = try runReport(of: coordinator)
        #expect(report.steps.map(\.step.id.description) == ["a@2", "b@1", "a@3", "b@2", "b@3"])
        #expect(report.steps.map(\.outcome) == [.applied, .applied, .failed(message: "boom"), .cancelled, .cancelled])
        #expect(report.managers.map(\.levelAfter) == ["2", "1"])
        #expect(report.steps.filter { $0.outcome == .cancelled }.allSatisfy { $0.startedAt == nil && $0.duration == nil })
    }

    // MARK: Events

    @Test
    func everyEventArrivesBeforeTheRunCompletes() throws {
        let coordinator = MigrationCoordinator(appVersion: "2")
        coordinator.maxConcurrentStores = 2
        let bStarted = DispatchSemaphore(value: 0), skipBeingDelivered = DispatchSemaphore(value: 0)
        let completed = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0), told = DispatchSemaphore(value: 0)
        let late = EventLog()
        coordinator.observer = { event in
            guard case .skipped(let step, _) = event else { return }
            skipBeingDelivered.signal() // lets b@1, the last running step, finish
            // A correct run cannot complete while one of its events is being delivered.
            if completed.wait(timeout: .now() + 2) == .success { late.append("completed while telling of \(step.id)") }
            told.signal()
        }
        let a = try coordinator.manager("a", store: Store([]))
        a.register("1") { _ in
            guard bStarted.waitForEvent() else { throw TestFailure(message: "b@1 never ran alongside") }
            throw TestFailure(message: "a@1 broke")
        }
        registerLogging(["2"], on: a)
        try coordinator.manager("b", store: Store([])).register("1") { _ in
            bStarted.signal()
            _ = skipBeingDelivered.waitForEvent()
        }
        coordinator.run(queue: DispatchQueue(label: "ObservabilityTests.completion")) { _ in
            completed.signal()
            done.signal()
        }
        #expect(done.waitForEvent())
        #expect(told.waitForEvent())
        #expect(late.all.isEmpty)
    }

    // MARK: Progress

    @Test
    func progressOfAnUpToDateRunCompletes() throws {
        let coordinator = MigrationCoordinator(appVersion: "2")
        registerLogging(["1", "2"], on: try coordinator.manager("a", store: Store([], records: ["a": MigrationRecord(baseline: "2")])))
        let box = HandleBox()
        #expect(try runWithHandle(coordinator, box: box).get().steps.isEmpty)
        #expect(box.get()?.progress.fractionCompleted == 1)
        let parent = Progress(totalUnitCount: 4)
        parent.becomeCurrent(withPendingUnitCount: 4)
        try coordinator.run()
        parent.resignCurrent()
        #expect(parent.completedUnitCount == 4)
    }

    @Test func progressCompletesWhenStepsFailAreSkippedOrCancelled() throws {
        let coordinator = MigrationCoordinator(appVersion: "2")
        coordinator.maxConcurrentStores = 1
        coordinator.failurePolicy = .stopOnFirstFailure
        let a = try coordinator.manager("a", store: Store([]))
        a.register("1") { _, context in context.reportProgress(0.3) }
        a.register("2") { _ in throw TestFailure(message: "boom") }
        registerLogging(["2-1"], on: a)
        registerLogging(["1", "2"], on: try coordinator.manager("b", store: Store([])), dependsOn: ["2": [a.migration("2")]])
        let parent = Progress(totalUnitCount: 1)
        parent.becomeCurrent(withPendingUnitCount: 1)
        let report = try runReport(of: coordinator)
        parent.resignCurrent()
        #expect(report.steps.map(\.outcome) == [
            .applied, .applied, .failed(message: "boom"), .skipped(because: stepID("a", "2")), .skipped(because: stepID("a", "2")),
        ])
        #expect(parent.fractionCompleted == 1)
    }
}
