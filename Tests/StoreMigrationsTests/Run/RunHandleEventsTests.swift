import Dispatch
import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

/// A run's handle streams its events and tells where the run stands, with no state of the
/// caller's own: every event, in order, and a stream that ends with the run however it ends.
// A stream that never ended would hang its test: ten minutes is the outer bound, never a deadline.
@Suite(.timeLimit(.minutes(10))) struct RunHandleEventsTests {
    typealias Store = InMemoryStore<[String]>

    /// Every event of `handle`'s run, read after the run has ended, described.
    static func events(of handle: MigrationRunHandle) async -> [String] {
        var events: [String] = []
        for await event in handle.events { events.append(describe(event)) }
        return events
    }

    @Test func everyEventArrivesInOrderAndTheStreamEndsWithTheRun() async throws {
        let coordinator = MigrationCoordinator(appVersion: "2")
        coordinator.maxConcurrentStores = 1
        let observed = EventLog()
        coordinator.observer = { event in observed.append(describe(event)) }
        let a = try coordinator.manager("a", store: Store([]))
        a.register("1") { _, context in
            context.reportProgress(completed: 1, of: 4)
            context.reportProgress(0.5)
        }
        a.register("2") { _ in }
        registerLogging(["1"], on: try coordinator.manager("b", store: Store([])))

        let handle = coordinator.run(queue: DispatchQueue(label: "completion")) { _ in }
        // Read once the run has ended: the stream keeps every event from the first.
        let report = try await handle.report()
        let streamed = await Self.events(of: handle)
        #expect(streamed == [
            "planned 3",
            "started a@1", "progress a@1 0.25", "progress a@1 0.5", "finished a@1",
            "started b@1", "finished b@1",
            "started a@2", "finished a@2",
        ])
        #expect(streamed == observed.all)
        #expect(report.succeeded)
        let snapshot = handle.snapshot
        #expect(snapshot.isFinished && snapshot.stepCount == 3 && snapshot.appliedCount == 3 && snapshot.running.isEmpty)
        #expect(snapshot.fractionCompleted == 1)
        #expect(snapshot.description == "3 of 3 steps ended (100%); finished")
    }

    @Test func theStreamEndsWhenAStepFailsAndWhenTheRunIsRefused() async throws {
        let coordinator = MigrationCoordinator(appVersion: "2")
        coordinator.maxConcurrentStores = 1
        let a = try coordinator.manager("a", store: Store([]))
        a.register("1") { _ in }
        a.register("2") { _ in throw TestFailure(message: "boom") }
        a.register("2-1") { _ in }

        let handle = coordinator.run(queue: DispatchQueue(label: "completion")) { _ in }
        let streamed = await Self.events(of: handle)
        #expect(streamed == [
            "planned 3", "started a@1", "finished a@1", "started a@2", "failed a@2: boom", "skipped a@2-1 because a@2",
        ])
        await #expect(throws: MigrationRunError.self) { try await handle.report() }
        let snapshot = handle.snapshot
        #expect(snapshot.isFinished)
        #expect(snapshot.appliedCount == 1 && snapshot.failedCount == 1 && snapshot.skippedCount == 1)
        #expect(snapshot.description == "3 of 3 steps ended (100%), 1 failed; finished")

        // A graph refused before anything runs: no event, and a stream that ends at once.
        a.register("1") { _ in }
        let refused = coordinator.run(queue: DispatchQueue(label: "completion")) { _ in }
        let none = await Self.events(of: refused)
        #expect(none.isEmpty)
        await #expect(throws: MigrationError.self) { try await refused.report() }
        #expect(refused.snapshot.isFinished && refused.snapshot.stepCount == 0)
    }

    @Test func theStreamEndsWhenTheRunIsCancelledAndTheSnapshotShowsTheRunningStep() async throws {
        let coordinator = MigrationCoordinator(appVersion: "3")
        coordinator.maxConcurrentStores = 1
        let reported = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let a = try coordinator.manager("a", store: Store([]))
        a.register("1") { _, context in
            context.reportProgress(0.4)
            reported.signal()
            _ = release.waitForEvent()
        }
        a.register("2") { _ in }
        a.register("3") { _ in }

        let handle = coordinator.run(queue: DispatchQueue(label: "completion")) { _ in }
        // A generous outer bound, never reached unless the run is stuck.
        #expect(await Task.detached { reported.waitForEvent() }.value)
        let running = handle.snapshot
        #expect(running.running == [MigrationRunSnapshot.RunningStep(id: PlannedStep.ID(manager: "a", action: .migrate, version: "1"), fraction: 0.4)])
        #expect(!running.isFinished && running.stepCount == 3 && running.endedCount == 0)
        #expect(running.description == "0 of 3 steps ended (13%); running a@1 (40%)")
        handle.cancel()
        release.signal()

        let streamed = await Self.events(of: handle)
        #expect(streamed == [
            // The cancellation skips the steps not started at once; the running one then ends.
            "planned 3", "started a@1", "progress a@1 0.4", "skipped a@2 because cancelled", "skipped a@3 because cancelled",
            "finished a@1",
        ])
        let error = try #require(await #expect(throws: MigrationRunError.self) { try await handle.report() })
        #expect(error.report.steps.map(\.outcome) == [.applied, .cancelled, .cancelled])
        #expect(handle.snapshot.skippedCount == 2 && handle.snapshot.isFinished)
    }

    @Test func theSnapshotRoundTripsThroughJSON() throws {
        var snapshot = MigrationRunSnapshot()
        snapshot.stepCount = 2
        snapshot.appliedCount = 1
        snapshot.running = [.init(id: PlannedStep.ID(manager: "a", action: .migrate, version: "2"), fraction: 0.5)]
        let decoded = try JSONDecoder().decode(MigrationRunSnapshot.self, from: JSONEncoder().encode(snapshot))
        #expect(decoded == snapshot)
        #expect(decoded.fractionCompleted == 0.75)
    }
}
