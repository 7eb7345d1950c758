import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

/// What a new user met reading reports and events: a step's `id`, an already-applied step told
/// apart from a finished one, each percentage once, migrations past the app version in the report.
@Suite struct ReportAndEventTests {
    /// A store in which another process applies `1.0` for `m` just before the first step's
    /// transaction.
    final class RacedStore: MigrationStore, @unchecked Sendable {
        // @unchecked: `raced` is only touched with `lock` held; `inner` is thread-safe.
        let inner = InMemoryStore([String](), name: "raced store")
        private let lock = NSLock()
        private var raced = false
        var description: String { inner.description }

        func readRecords() throws -> [String: MigrationRecord] { try inner.readRecords() }

        func transaction<T>(
            _ request: TransactionRequest, _ body: (inout [String: MigrationRecord], inout [String]) throws -> T
        ) throws -> T {
            if lock.withLock({ () -> Bool in defer { raced = true }; return !raced }) {
                try inner.transaction { records, _ in records["m", default: MigrationRecord()].markApplied("1.0") }
            }
            return try inner.transaction(body)
        }
    }

    @Test func aStepOfTheReportHasTheIDOfItsPlannedStep() throws {
        let coordinator = MigrationCoordinator(appVersion: "1")
        try coordinator.manager("m", store: InMemoryStore([Int](), name: "s")).register("1") { $0.append(1) }
        let report = try coordinator.run()
        #expect(report.steps.map(\.id) == [stepID("m", "1")])
    }

    @Test func aStepAnotherProcessAppliedIsReportedAsSuchNotAsFinished() throws {
        let log = EventLog()
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        coordinator.observer = { log.append(describe($0)) }
        try coordinator.manager("m", store: RacedStore()).register("1.0") { _ in Issue.record("the body ran") }
        let report = try coordinator.run()
        #expect(report.steps.map(\.outcome) == [.alreadyApplied(level: "1.0")])
        #expect(log.all == ["planned 1", "started m@1.0", "alreadyApplied m@1.0"])
    }

    @Test func eachPercentageIsSentOnceHoweverOftenABodyReports() throws {
        let fractions = Locked<[Double]>([])
        let coordinator = MigrationCoordinator(appVersion: "1")
        coordinator.observer = { event in if case .progress(_, let fraction) = event { fractions.value.append(fraction) } }
        try coordinator.manager("m", store: InMemoryStore([Int](), name: "s")).register("1") { _, context in
            for batch in 1...400 { context.reportProgress(completed: batch, of: 400) }
        }
        _ = try coordinator.run()
        let percentages = fractions.value.map { Int(($0 * 100).rounded()) }
        #expect(percentages == Array(1...100), "one event a percentage: \(percentages.count) events")
    }

    @Test func migrationsPastTheAppVersionAreInTheReportAsInThePlan() throws {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let manager = try coordinator.manager("m", store: InMemoryStore([Int](), name: "s"))
        manager.register("2.0") { $0.append(2) }
        manager.register("3.0") { $0.append(3) }
        #expect(try coordinator.plan().managers.map(\.ahead) == [["3.0"]])
        let report = try coordinator.run()
        #expect(report.managers.map(\.ahead) == [["3.0"]])
        #expect(report.description.contains("  m: level none → 2.0; ahead 3.0"))
    }
}
