import Foundation
import Testing
@testable import StoreMigrations

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
        #expect(done.wait(timeout: .now() + 10) == .success)
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
}
