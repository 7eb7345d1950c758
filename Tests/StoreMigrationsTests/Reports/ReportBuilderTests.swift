import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

/// The report of a run: each step's outcome, and each manager's level after it, as the steps'
/// outcomes leave it.
@Suite struct ReportBuilderTests {
    @Test func levelsFollowAppliedStepsAndAnotherProcesssRecord() throws {
        let ahead = InMemoryStore([Int](), records: ["b": MigrationRecord(applied: [.init(version: "1")])], name: "b")
        let coordinator = MigrationCoordinator(appVersion: "3")
        let a = try coordinator.manager("a", store: InMemoryStore([Int](), name: "a"))
        a.register("1") { $0.append(1) }
        a.register("2") { $0.append(2) }
        let b = try coordinator.manager("b", store: ahead)
        b.register("1") { $0.append(1) }
        b.register("3") { $0.append(3) }
        let report = try coordinator.run()
        #expect(report.steps.map(\.outcome) == [.applied, .applied, .applied])
        #expect(report.managers.map { "\($0.name) \($0.levelBefore?.description ?? "none") → \($0.levelAfter?.description ?? "none")" }
            == ["a none → 2", "b 1 → 3"])
        #expect(report.managers.map(\.description) == ["a: level none → 2", "b: level 1 → 3"])
        #expect(report.succeeded && report.didRunAnything && report.postponed.isEmpty)
    }

    @Test func aFailureKeepsItsLevelAndNamesWhatItSkipped() throws {
        let coordinator = MigrationCoordinator(appVersion: "2")
        let a = try coordinator.manager("a", store: InMemoryStore([Int](), name: "a"))
        a.register("1") { $0.append(1) }
        a.register("2") { _ in throw SimulatedBodyFailure() }
        try coordinator.manager("b", store: InMemoryStore([Int](), name: "b")).register("2", dependsOn: [a.migration("2")]) { $0.append(2) }
        let report = try runReport(of: coordinator)
        #expect(report.steps.map(\.outcome) == [
            .applied, .failed(message: "\(SimulatedBodyFailure())"), .skipped(because: stepID("a", "2")),
        ])
        #expect(report.managers.map(\.levelAfter) == ["1", nil])
        #expect(!report.succeeded && report.failures.map(\.step.id) == [stepID("a", "2")])
    }
}
