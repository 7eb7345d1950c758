import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

/// The one place that decides "already done? skip : do it and record it", for every kind of step,
/// on an in-memory store whose content is a log of what bodies ran.
@Suite struct StepExecutorTests {
    static func store(_ records: [String: MigrationRecord] = [:]) -> InMemoryStore<[String]> {
        InMemoryStore([], records: records, name: "log")
    }

    @Test func aMigrationRunsOnceAndIsRecordedWithItsContent() throws {
        let store = Self.store()
        let first = try StepExecutor.migrate("1.1", of: "m", in: store) { log, context in
            log.append("1.1 after \(context().levelBefore?.description ?? "none")")
        }
        #expect(first == .applied(level: "1.1"))
        let again = try StepExecutor.migrate("1.1", of: "m", in: store) { log, _ in log.append("again") }
        #expect(again == .alreadyApplied(level: "1.1"))
        #expect(store.contents == ["1.1 after none"])
        let record = try #require(try store.readRecords()["m"])
        #expect(record.appliedVersions == ["1.1"] && record.applied[0].appliedAt != nil && record.applied[0].duration != nil)
    }

    /// The outcome carries the level of the record the step committed: a late migration below
    /// the level leaves it where it was, and the report takes it from there.
    @Test func anAppliedStepReturnsTheLevelOfTheRecordItCommitted() throws {
        let store = Self.store(["m": MigrationRecord(applied: [.init(version: "1"), .init(version: "3")])])
        #expect(try StepExecutor.migrate("2", of: "m", in: store) { log, _ in log.append("late 2") } == .applied(level: "3"))
        #expect(try StepExecutor.appVersionChange(to: "4", of: "m", in: store) { _, _ in } == .applied(level: "3"))
    }

    @Test func aBodyThatThrowsRecordsNothingAndKeepsNothing() throws {
        let store = Self.store()
        #expect(throws: SimulatedBodyFailure.self) {
            try StepExecutor.migrate("1", of: "m", in: store) { log, _ in
                log.append("half")
                throw SimulatedBodyFailure()
            }
        }
        #expect(try store.contents == [] && store.readRecords().isEmpty)
    }

    @Test func aBaselineIsRecordedOnlyWhereThereIsNoLevel() throws {
        let store = Self.store(["applied": MigrationRecord(applied: [.init(version: "1")])])
        #expect(try StepExecutor.baseline("2", of: "new", in: store) == .applied(level: "2"))
        #expect(try StepExecutor.baseline("2", of: "applied", in: store) == .alreadyApplied(level: "1"))
        #expect(try store.readRecords()["new"] == MigrationRecord(baseline: "2"))
    }

    @Test func aResetForgetsTheRecordOnlyWhileTheStoreIsStillNewer() throws {
        let store = InMemoryStore(["old data"], records: ["m": MigrationRecord(baseline: "3")], name: "cache", rebuiltValue: [])
        #expect(try StepExecutor.reset("m", in: store, newerThan: "2") == .applied(level: nil))
        #expect(try store.contents == [] && store.readRecords()["m"] == nil)
        // Another process reset and migrated it meanwhile: nothing to lose again.
        try store.transaction { records, _ in records["m"] = MigrationRecord(applied: [.init(version: "2")]) }
        #expect(try StepExecutor.reset("m", in: store, newerThan: "2") == .alreadyApplied(level: "2"))
    }

    @Test func theAppVersionHookRunsOncePerVersionAndAThrowingHookRecordsNothing() throws {
        let store = Self.store()
        let calls = Locked<[String]>([])
        #expect(throws: SimulatedBodyFailure.self) {
            try StepExecutor.appVersionChange(to: "2.0", of: "m", in: store) { _, _ in throw SimulatedBodyFailure() }
        }
        #expect(try store.readRecords()["m"] == nil)
        for _ in 0..<2 {
            _ = try StepExecutor.appVersionChange(to: "2.0", of: "m", in: store) { previous, current in
                calls.value.append("\(previous?.description ?? "none") → \(current)")
            }
        }
        #expect(calls.value == ["none → 2.0"])
        #expect(try store.readRecords()["m"]?.appVersion == "2.0")
    }

    @Test func aStoreErrorIsAttributedToTheMigrationOnce() throws {
        struct StoreRefusal: MigrationAttributableError, Equatable {
            var migration: MigrationReference?
            func attributed(to migration: MigrationReference) -> any Error {
                StoreRefusal(migration: self.migration ?? migration)
            }
        }
        let error = try #require(throws: StoreRefusal.self) {
            try StepExecutor.migrate("1.2", of: "m", in: Self.store()) { _, _ in throw StoreRefusal() }
        }
        #expect(error.migration == MigrationReference(manager: "m", version: "1.2"))
    }

    /// A run that says to stop after every batch.
    final class StoppingRun: MigrationRunControl, @unchecked Sendable {
        // @unchecked: immutable apart from Progress, which is thread-safe.
        let stepProgress = Progress(totalUnitCount: 1_000)
        var isCancelled: Bool { false }
        func progress(ofStep step: Int) -> Progress { stepProgress }
        func reportProgress(ofStep step: Int, fraction: Double) {}
        func reportWait(_ wait: StoreWait, ofStep step: Int) {}
        func shouldStopBetweenBatches() -> Bool { true }
    }

    @Test func batchesStopWhenTheRunSaysSoAndResumeFromTheRecordedCursor() throws {
        let store = Self.store()
        func batch(_ log: inout [String], _ request: BatchRequest) -> BatchResult {
            let start = request.cursor.flatMap(Int.init) ?? 0
            log.append("batch from \(start)")
            return start + 10 >= 30 ? .finished(processed: 10) : .more(cursor: String(start + 10), processed: 10, total: 30)
        }
        let source = StepSource(run: StoppingRun(), step: 0)
        let stopped = try StepExecutor.migrateInBatches("2", of: "m", in: store, source: source, size: .fixed(10), batch)
        guard case .stoppedShort(.betweenBatches(let progress)) = stopped else { Issue.record("not stopped between batches: \(stopped)"); return }
        #expect(progress == StepProgress(version: "2", cursor: "10", done: 10, total: 30, batches: 1, elapsed: progress.elapsed))
        #expect(try store.readRecords()["m"]?.progress(of: "2") == progress)
        #expect(try StepExecutor.migrateInBatches("2", of: "m", in: store, size: .fixed(10), batch) == .applied(level: "2"))
        #expect(store.contents == ["batch from 0", "batch from 10", "batch from 20"])
        let record = try #require(try store.readRecords()["m"])
        #expect(record.appliedVersions == ["2"] && record.inProgress.isEmpty)
    }

    /// A baseline at or above a resumable step's progress covers it: the step counts as applied,
    /// so its cursor is done with, in every store (file and SQL stores dropped it when they read
    /// it back; the in-memory store kept it until the soak of issue 26 found it).
    @Test func aBaselineCoveringAStepPartWayDropsItsProgress() throws {
        let store = Self.store()
        func batch(_ log: inout [String], _ request: BatchRequest) -> BatchResult {
            let start = request.cursor.flatMap(Int.init) ?? 0
            return .more(cursor: String(start + 10), processed: 10, total: 30)
        }
        let stopped = try StepExecutor.migrateInBatches(
            "2", of: "m", in: store, source: StepSource(run: StoppingRun(), step: 0), size: .fixed(10), batch)
        guard case .stoppedShort = stopped else { Issue.record("not stopped between batches: \(stopped)"); return }
        #expect(try StepExecutor.baseline("3", of: "m", in: store) == .applied(level: "3"))
        let record = try #require(try store.readRecords()["m"])
        #expect(record.inProgress.isEmpty, "\(record)")
        #expect(record.baseline == "3" && record.isApplied("2"))
    }
}
