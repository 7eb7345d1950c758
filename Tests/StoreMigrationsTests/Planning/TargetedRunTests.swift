import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

/// `plan(targets:)` and `run(targets:)`: only the targeted migrations and the steps they depend
/// on, in plan order; typed errors for targets that name nothing or never run; nothing for
/// targets already applied; no app-version hooks.
@Suite struct TargetedRunTests {
    let coordinator = MigrationCoordinator(appVersion: "2.0")
    let log = EventLog()
    let hooks = BodyCounter()
    let a: MigrationManager<InMemoryStore<[String]>>
    let b: MigrationManager<InMemoryStore<[String]>>
    let c: MigrationManager<InMemoryStore<[String]>>

    /// a: 1.0, 1.1, 1.2, 3.0 (ahead); b: 1.0, 2.0 after a@1.1, with a hook; c: 1.0. One store at a
    /// time, so that steps run in plan order.
    init() throws {
        coordinator.maxConcurrentStores = 1
        a = try coordinator.manager("a", store: InMemoryStore<[String]>([], name: "store a"))
        b = try coordinator.manager("b", store: InMemoryStore<[String]>([], name: "store b"))
        c = try coordinator.manager("c", store: InMemoryStore<[String]>([], name: "store c"))
        registerLogging(["1.0", "1.1", "1.2", "3.0"], on: a, log: log)
        registerLogging(["1.0", "2.0"], on: b, log: log, dependsOn: ["2.0": [a.migration("1.1")]])
        registerLogging(["1.0"], on: c, log: log)
        let hooks = hooks
        b.onAppVersionChange { _, current in hooks.count("b:hook@\(current)") }
    }

    @Test func aTargetRunsWithWhatItDependsOnAndNothingElseInPlanOrder() throws {
        let plan = try coordinator.plan(targets: [b.migration("2.0")])
        #expect(plan.steps.map(\.id.description) == ["a@1.0", "b@1.0", "a@1.1", "b@2.0"])
        #expect(plan.steps.last?.dependencies.map(\.description) == ["b@1.0", "a@1.1"])
        #expect(plan.managers.map(\.pending) == [["1.0", "1.1"], ["1.0", "2.0"], []])

        let report = try coordinator.run(targets: [b.migration("2.0")])
        #expect(report.steps.map(\.step.id.description) == ["a@1.0", "b@1.0", "a@1.1", "b@2.0"])
        #expect(report.steps.allSatisfy { $0.outcome == .applied })
        #expect(log.all == ["a@1.0", "b@1.0", "a@1.1", "b@2.0"])
        #expect(hooks.total == 0, "hooks do not run in targeted runs")
        #expect(a.store.contents == ["a@1.0", "a@1.1"] && b.store.contents == ["b@1.0", "b@2.0"] && c.store.contents == [])
        #expect(try a.level() == "1.1" && b.level() == "2.0" && c.level() == nil)

        // The rest, and the hook, in an untargeted run.
        let rest = try coordinator.run()
        #expect(rest.steps.map(\.step.id.description) == ["a@1.2", "b:appVersionChange@2.0", "c@1.0"])
        #expect(log.all == ["a@1.0", "b@1.0", "a@1.1", "b@2.0", "a@1.2", "c@1.0"])
        #expect(hooks.counts == ["b:hook@2.0": 1])
    }

    @Test func severalTargetsAndATargetWhoseDependenciesAreApplied() throws {
        let first = try coordinator.run(targets: [c.migration("1.0"), a.migration("1.0")])
        #expect(first.steps.map(\.step.id.description) == ["a@1.0", "c@1.0"])
        #expect(log.all == ["a@1.0", "c@1.0"])

        let second = try coordinator.run(targets: [b.migration("2.0")])
        #expect(second.steps.map(\.step.id.description) == ["a@1.1", "b@1.0", "b@2.0"])
        #expect(log.all == ["a@1.0", "c@1.0", "a@1.1", "b@1.0", "b@2.0"])
        #expect(hooks.total == 0)
    }

    @Test func anUnknownTargetIsATypedErrorAndNothingRuns() throws {
        for target in [MigrationReference(manager: "a", version: "1.5"), MigrationReference(manager: "z", version: "1.0")] {
            #expect(throws: MigrationError.unknownTarget(target)) { try coordinator.plan(targets: [target]) }
            #expect(throws: MigrationError.unknownTarget(target)) { try coordinator.run(targets: [b.migration("2.0"), target]) }
        }
        #expect(log.all == [] && hooks.total == 0)
        #expect(try a.store.readRecords() == [:])
    }

    @Test func aTargetAheadOfTheAppVersionIsATypedErrorAndNothingRuns() throws {
        let expected = MigrationError.targetAhead(a.migration("3.0"), appVersion: "2.0")
        #expect(throws: expected) { try coordinator.plan(targets: [a.migration("3.0")]) }
        #expect(throws: expected) { try coordinator.run(targets: [a.migration("1.0"), a.migration("3.0")]) }
        #expect(log.all == [] && hooks.total == 0)
    }

    @Test func anAppliedTargetRunsNothing() throws {
        try coordinator.run()
        let applied = log.all
        #expect(applied.count == 6)
        for target in [b.migration("2.0"), a.migration("1.0"), c.migration("1.0")] {
            #expect(try coordinator.plan(targets: [target]).isUpToDate)
            let report = try coordinator.run(targets: [target])
            #expect(report.steps.isEmpty && !report.didRunAnything)
        }
        #expect(log.all == applied)
        #expect(hooks.counts == ["b:hook@2.0": 1])
    }
}
