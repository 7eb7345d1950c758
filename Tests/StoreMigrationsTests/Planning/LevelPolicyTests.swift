import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

@Suite struct LevelPolicyTests {
    typealias Store = InMemoryStore<[String]>

    @Test func runsEverySkippedVersionInOrderNeverPastTheApp() throws {
        let store = Store([], records: ["prefs": MigrationRecord(baseline: "1.0")])
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let prefs = try coordinator.manager("prefs", store: store)
        registerLogging(["2.0-1", "3.0", "1.0", "1.5", "0.9", "2.0", "1.1"], on: prefs)
        let report = try coordinator.run()
        #expect(store.contents == ["prefs@1.1", "prefs@1.5", "prefs@2.0", "prefs@2.0-1"])
        #expect(store.recordedStates["prefs"]?.level == "2.0-1")
        #expect(report.managers.map(\.levelAfter) == ["2.0-1"])
        #expect(try prefs.level() == "2.0-1")
    }

    @Test func subMigrationAddedLaterRunsAlone() throws {
        let store = Store([])
        for subMigrations in [["1.1", "1.1-1", "1.1-2"], ["1.1", "1.1-1", "1.1-2", "1.1-3"]] {
            let coordinator = MigrationCoordinator(appVersion: "1.1")
            registerLogging(subMigrations.map { Version(stringLiteral: $0) }, on: try coordinator.manager("m", store: store))
            try coordinator.run()
        }
        #expect(store.contents == ["m@1.1", "m@1.1-1", "m@1.1-2", "m@1.1-3"])
    }

    @Test func firstLaunchRunAllIsTheDefault() throws {
        let store = Store([])
        let coordinator = MigrationCoordinator(appVersion: "2")
        registerLogging([1, 2, 3], on: try coordinator.manager("levels", store: store))
        #expect(try coordinator.plan().managers[0].firstLaunch == .runAll)
        try coordinator.run()
        #expect(store.contents == ["levels@1", "levels@2"])
    }

    @Test func firstLaunchBaselineRecordsTheHighestRunnableVersion() throws {
        for (registered, expected) in [(["1.0", "2.0"], "2.0"), (["2.0", "2.0-1", "2.1"], "2.0-1"), ([], "2.0")] as [([Version], Version)] {
            let store = Store([])
            let coordinator = MigrationCoordinator(appVersion: "2.0")
            let prefs = try coordinator.manager("prefs", store: store)
            prefs.firstLaunchPolicy = .baseline
            registerLogging(registered, on: prefs)
            let plan = try coordinator.plan()
            #expect(plan.steps.map(\.id.description) == ["prefs:baseline@\(expected)"])
            #expect(plan.managers[0].pending.isEmpty)
            try coordinator.run()
            #expect(store.contents.isEmpty)
            #expect(store.recordedStates["prefs"]?.level == expected)
            #expect(try coordinator.plan().isUpToDate)
        }
    }

    @Test func baselineSatisfiesDependenciesOnCoveredVersions() throws {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let prefs = try coordinator.manager("prefs", store: Store([]))
        let library = try coordinator.manager("library", store: Store([], records: ["library": MigrationRecord(baseline: "1.0")]))
        prefs.firstLaunchPolicy = .baseline
        registerLogging(["1.1"], on: prefs)
        registerLogging(["1.0", "2.0"], on: library, dependsOn: ["2.0": [prefs.migration("1.1")]])
        let plan = try coordinator.plan()
        #expect(plan.steps.map(\.description) == ["prefs:baseline@2.0", "library@2.0 after prefs:baseline@2.0"])
        try coordinator.run()
        #expect(prefs.store.contents.isEmpty)
        #expect(library.store.contents == ["library@2.0"])
    }

    @Test func firstLaunchDecideLooksAtTheStore() throws {
        for (legacy, expected) in [(["legacy row"], ["prefs@1.0", "prefs@2.0"]), ([], [])] {
            let store = Store(legacy)
            let coordinator = MigrationCoordinator(appVersion: "2.0")
            let prefs = try coordinator.manager("prefs", store: store)
            prefs.firstLaunchPolicy = .decide { store in store.contents.isEmpty ? .baseline : .runAll }
            registerLogging(["1.0", "2.0"], on: prefs)
            #expect(try coordinator.plan().managers[0].firstLaunch == (legacy.isEmpty ? .baseline : .runAll))
            try coordinator.run()
            #expect(store.contents == legacy + expected)
            #expect(store.recordedStates["prefs"]?.level == "2.0")
        }
    }

    @Test func failingDecisionIsATypedError() throws {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let prefs = try coordinator.manager("prefs", store: Store([], name: "prefs file"))
        prefs.firstLaunchPolicy = .decide { _ in throw TestFailure(message: "disk on fire") }
        #expect(throws: MigrationError.firstLaunchDecisionFailed(manager: "prefs", store: "prefs file", reason: "disk on fire")) {
            try coordinator.plan()
        }
    }

    @Test func baselineAtAdoptsMidLifeOnce() throws {
        let store = Store([])
        for _ in 0..<2 {
            let coordinator = MigrationCoordinator(appVersion: "2.0")
            let prefs = try coordinator.manager("prefs", store: store)
            registerLogging(["1.1", "1.2", "1.3", "2.0"], on: prefs)
            let recorded = try prefs.baseline(at: "1.2")
            #expect(recorded == (store.contents.isEmpty))
            try coordinator.run()
        }
        #expect(store.contents == ["prefs@1.3", "prefs@2.0"])
        #expect(store.recordedStates["prefs"]?.level == "2.0")
    }

    @Test func unreadableLevelIsAnErrorNotAFirstLaunch() throws {
        let store = Store(["data"], name: "prefs file")
        store.readFailure = TestFailure(message: "permission denied")
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let other = Store([])
        registerLogging(["1.0"], on: try coordinator.manager("other", store: other))
        registerLogging(["1.0"], on: try coordinator.manager("prefs", store: store))
        let error = MigrationError.unreadableState(manager: "prefs", store: "prefs file", reason: "permission denied")
        #expect(throws: error) { try coordinator.plan() }
        #expect(throws: error) { try coordinator.run() }
        #expect(store.contents == ["data"])
        #expect(other.contents.isEmpty, "nothing runs when a level is unreadable")
        #expect(error.description.contains("an unreadable level is never taken for a first launch"))
    }

    @Test func newerStoreFailsBeforeAnythingRuns() throws {
        let newer = Store(["v3 data"], records: ["prefs": MigrationRecord(baseline: "3.0")], name: "prefs file")
        let other = Store([])
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        registerLogging(["1.0"], on: try coordinator.manager("other", store: other))
        registerLogging(["1.0", "2.0"], on: try coordinator.manager("prefs", store: newer))
        let error = MigrationError.storeIsNewer(manager: "prefs", store: "prefs file", level: "3.0", appVersion: "2.0")
        #expect(throws: error) { try coordinator.run() }
        #expect(other.contents.isEmpty)
        #expect(newer.contents == ["v3 data"])
        #expect(newer.recordedStates["prefs"]?.level == "3.0")
        #expect(error.description.hasPrefix("Manager \"prefs\" on prefs file is at level 3.0, past app version 2.0"))
    }

    @Test func subMigrationOfTheAppVersionIsNotNewer() throws {
        let store = Store([], records: ["prefs": MigrationRecord(baseline: "2.0-3")])
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        registerLogging(["2.0", "2.0-3"], on: try coordinator.manager("prefs", store: store))
        #expect(try coordinator.plan().isUpToDate)
    }

    @Test func newerStoreIgnoredLeavesItAlone() throws {
        let newer = Store(["v3 data"], records: ["prefs": MigrationRecord(baseline: "3.0")])
        let library = Store([])
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let prefs = try coordinator.manager("prefs", store: newer)
        prefs.newerStorePolicy = .ignore
        prefs.onAppVersionChange { _, _ in Issue.record("an ignored store's hook must not run") }
        registerLogging(["1.0", "2.0"], on: prefs)
        registerLogging(["2.0"], on: try coordinator.manager("library", store: library), dependsOn: ["2.0": [prefs.migration("2.0")]])
        let plan = try coordinator.plan()
        #expect(plan.managers[0].newerStore == .ignore)
        #expect(plan.steps.map(\.description) == ["library@2.0"])
        try coordinator.run()
        #expect(newer.contents == ["v3 data"])
        #expect(newer.recordedStates["prefs"]?.level == "3.0")
        #expect(library.contents == ["library@2.0"])
    }

    @Test func newerRebuildableStoreIsReset() throws {
        let cache = Store(["v3 thumbnails"], records: ["thumbs": MigrationRecord(baseline: "3.0")], rebuiltValue: [])
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let thumbs = try coordinator.manager("thumbs", store: cache)
        thumbs.newerStorePolicy = .reset
        registerLogging(["1.0", "2.0", "3.0"], on: thumbs)
        #expect(try coordinator.plan().steps.map(\.id.description) == ["thumbs:reset", "thumbs@1.0", "thumbs@2.0"])
        try coordinator.run()
        #expect(cache.contents == ["thumbs@1.0", "thumbs@2.0"])
        #expect(cache.recordedStates["thumbs"]?.level == "2.0")
    }

    @Test func resetPolicyOnADurableStoreIsRejected() throws {
        let store = Store(["data"], records: ["prefs": MigrationRecord(baseline: "3.0")], name: "prefs file")
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let prefs = try coordinator.manager("prefs", store: store)
        prefs.newerStorePolicy = .reset
        #expect(throws: MigrationError.resetNotSupported(manager: "prefs", store: "prefs file")) { try coordinator.run() }
        #expect(store.contents == ["data"])
    }

    @Test func appVersionChangeHookRunsOncePerChange() throws {
        let store = Store([])
        let log = EventLog()
        for app: Version in ["1.0", "1.0", "2.0", "2.0", "2.1"] {
            let coordinator = MigrationCoordinator(appVersion: app)
            let prefs = try coordinator.manager("prefs", store: store)
            registerLogging(["1.0", "2.0"], on: prefs, log: log)
            prefs.onAppVersionChange { previous, current in log.append("hook \(previous?.description ?? "nil") → \(current)") }
            try coordinator.run()
        }
        #expect(log.all == ["prefs@1.0", "hook nil → 1.0", "prefs@2.0", "hook 1.0 → 2.0", "hook 2.0 → 2.1"])
        #expect(store.recordedStates["prefs"] == LevelState(level: "2.0", appVersion: "2.1"))
    }

    @Test func failingHookIsRetriedNextLaunch() throws {
        let store = Store([])
        let attempts = EventLog()
        for shouldFail in [true, false, false] {
            let coordinator = MigrationCoordinator(appVersion: "2.0")
            let prefs = try coordinator.manager("prefs", store: store)
            prefs.onAppVersionChange { _, _ in
                attempts.append("hook")
                if shouldFail { throw TestFailure(message: "no network") }
            }
            if shouldFail {
                #expect(throws: MigrationRunError.self) { try coordinator.run() }
            } else {
                try coordinator.run()
            }
        }
        #expect(attempts.all == ["hook", "hook"])
    }

    @Test func resetForgetsTheLevel() throws {
        let store = Store([])
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let prefs = try coordinator.manager("prefs", store: store)
        registerLogging(["1.0", "2.0"], on: prefs)
        try coordinator.run()
        try coordinator.run()
        try prefs.reset()
        #expect(try prefs.level() == nil)
        try coordinator.run()
        #expect(store.contents == ["prefs@1.0", "prefs@2.0", "prefs@1.0", "prefs@2.0"])
    }

    @Test func managersSharingAStoreKeepSeparateLevels() throws {
        let store = Store([])
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let a = try coordinator.manager("a", store: store)
        let b = try coordinator.manager("b", store: store)
        registerLogging(["1.0", "2.0"], on: a)
        registerLogging(["1.5"], on: b)
        try coordinator.run()
        #expect(store.recordedStates == ["a": LevelState(level: "2.0"), "b": LevelState(level: "1.5")])
        #expect(Set(store.contents) == ["a@1.0", "a@2.0", "b@1.5"])
    }

    // MARK: Sub-migrations under every policy

    @Test func subMigrationsAndTheAppVersionUnderEveryPolicy() throws {
        let registered: [Version] = ["2.0-2", "1.0", "2.0", "2.1-1", "2.0-1", "2.1"]
        func plan(level: Version?, firstLaunch: FirstLaunchPolicy<Store> = .runAll, newer: NewerStorePolicy = .fail,
                  rebuildable: Bool = false) throws -> MigrationPlan {
            let store = Store([], records: level.map { ["m": MigrationRecord(baseline: $0)] } ?? [:], rebuiltValue: rebuildable ? [] : nil)
            let coordinator = MigrationCoordinator(appVersion: "2.0")
            let manager = try coordinator.manager("m", store: store)
            manager.firstLaunchPolicy = firstLaunch
            manager.newerStorePolicy = newer
            registerLogging(registered, on: manager)
            return try coordinator.plan()
        }
        let runAll = try plan(level: nil)
        #expect(runAll.steps.map(\.id.description) == ["m@1.0", "m@2.0", "m@2.0-1", "m@2.0-2"])
        #expect(runAll.managers[0].ahead == ["2.1", "2.1-1"])
        #expect(try plan(level: nil, firstLaunch: .baseline).steps.map(\.id.description) == ["m:baseline@2.0-2"])
        #expect(try plan(level: nil, firstLaunch: .decide { _ in .baseline }).steps.map(\.id.description) == ["m:baseline@2.0-2"])
        #expect(try plan(level: "2.0").managers[0].pending == ["2.0-1", "2.0-2"])
        #expect(try plan(level: "2.0-1").managers[0].pending == ["2.0-2"])
        // A sub-migration of the app version past every registered one is not a newer store.
        for newer in [NewerStorePolicy.fail, .ignore, .reset] {
            let upToDate = try plan(level: "2.0-3", newer: newer, rebuildable: true)
            #expect(upToDate.isUpToDate)
            #expect(upToDate.managers[0].newerStore == nil)
        }
        #expect(try plan(level: "2.0.1-0").blockingErrors == [
            .storeIsNewer(manager: "m", store: "in-memory store", level: "2.0.1-0", appVersion: "2.0"),
        ])
        #expect(try plan(level: "2.1-1", newer: .ignore).isUpToDate)
        #expect(try plan(level: "2.1-1", newer: .reset, rebuildable: true).steps.map(\.id.description)
            == ["m:reset", "m@1.0", "m@2.0", "m@2.0-1", "m@2.0-2"])
    }

    // MARK: Baseline, reset and hooks

    @Test func baselineAtThenResetThenBaselineAgain() throws {
        let store = Store([])
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let prefs = try coordinator.manager("prefs", store: store)
        registerLogging(["1.1", "1.2", "1.2-1", "2.0"], on: prefs)
        #expect(try prefs.baseline(at: "1.2"))
        #expect(try !prefs.baseline(at: "1.0"), "a second baseline never moves the level")
        #expect(try coordinator.plan().managers[0].pending == ["1.2-1", "2.0"])
        try prefs.reset()
        #expect(try prefs.level() == nil)
        #expect(try coordinator.plan().managers[0].firstLaunch == .runAll)
        #expect(try coordinator.plan().managers[0].pending == ["1.1", "1.2", "1.2-1", "2.0"])
        #expect(try prefs.baseline(at: "1.2-1"))
        try coordinator.run()
        #expect(store.contents == ["prefs@2.0"])
        try prefs.reset()
        #expect(store.recordedStates["prefs"] == nil)
        try coordinator.run()
        #expect(store.contents == ["prefs@2.0", "prefs@1.1", "prefs@1.2", "prefs@1.2-1", "prefs@2.0"])
    }

    @Test func hookAfterAFailedMigrationIsSkippedThenRunsOnceWithThePreviousVersion() throws {
        let store = Store([], records: ["prefs": MigrationRecord(baseline: "1.0", appVersion: "1.0")])
        let log = EventLog()
        for fail in [true, false, false] {
            let coordinator = MigrationCoordinator(appVersion: "2.0")
            let prefs = try coordinator.manager("prefs", store: store)
            registerLogging(["1.0", "2.0"], on: prefs, log: log)
            prefs.register("2.0-1") { _ in if fail { throw TestFailure(message: "disk full") } }
            prefs.onAppVersionChange { previous, current in log.append("hook \(previous?.description ?? "nil") → \(current)") }
            let report = try runReport(of: coordinator)
            if fail {
                #expect(report.steps.map(\.outcome) == [.applied, .failed(message: "disk full"), .skipped(because: stepID("prefs", "2.0-1"))])
                #expect(report.managers[0].levelAfter == "2.0")
            }
        }
        #expect(log.all == ["prefs@2.0", "hook 1.0 → 2.0"])
        #expect(store.recordedStates["prefs"] == LevelState(level: "2.0-1", appVersion: "2.0"))
    }

    @Test func failingHookAfterABaselineKeepsTheBaselineAndRetriesOnlyTheHook() throws {
        let store = Store([])
        let attempts = EventLog()
        var reports: [MigrationReport] = []
        for fail in [true, false, false] {
            let coordinator = MigrationCoordinator(appVersion: "2.0")
            let prefs = try coordinator.manager("prefs", store: store)
            prefs.firstLaunchPolicy = .baseline
            registerLogging(["1.0", "2.0-1"], on: prefs)
            prefs.onAppVersionChange { previous, current in
                attempts.append("hook \(previous?.description ?? "nil") → \(current)")
                if fail { throw TestFailure(message: "offline") }
            }
            reports.append(try runReport(of: coordinator))
        }
        #expect(reports[0].steps.map(\.step.id.description) == ["prefs:baseline@2.0-1", "prefs:appVersionChange@2.0"])
        #expect(reports[0].steps.map(\.outcome) == [.applied, .failed(message: "offline")])
        #expect(reports[0].managers[0].levelAfter == "2.0-1")
        #expect(reports[1].steps.map(\.step.id.description) == ["prefs:appVersionChange@2.0"])
        #expect(reports[1].steps[0].step.previousAppVersion == nil)
        #expect(reports[2].steps.isEmpty)
        #expect(attempts.all == ["hook nil → 2.0", "hook nil → 2.0"])
        #expect(store.contents.isEmpty)
        #expect(store.recordedStates["prefs"] == LevelState(level: "2.0-1", appVersion: "2.0"))
    }

    @Test
    func hookAfterAResetIsToldWhatThePlanSays() throws {
        let cache = Store(["v3"], records: ["thumbs": MigrationRecord(baseline: "3.0", appVersion: "3.0")], rebuiltValue: [])
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let thumbs = try coordinator.manager("thumbs", store: cache)
        thumbs.newerStorePolicy = .reset
        registerLogging(["1.0"], on: thumbs)
        let told = EventLog()
        thumbs.onAppVersionChange { previous, _ in told.append(previous?.description ?? "nil") }
        let plan = try coordinator.plan()
        let planned = try #require(plan.steps.last)
        #expect(planned.action == .appVersionChange)
        try coordinator.run()
        #expect(told.all == [planned.previousAppVersion?.description ?? "nil"])
    }

    @Test
    func resettingASharedRebuildableStoreKeepsTheOtherManagersConsistent() throws {
        let cache = Store(["thumbs v3", "previews v1"], records: [
            "thumbs": MigrationRecord(baseline: "3.0"), "previews": MigrationRecord(baseline: "1.0"),
        ], rebuiltValue: [])
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let thumbs = try coordinator.manager("thumbs", store: cache)
        thumbs.newerStorePolicy = .reset
        registerLogging(["1.0"], on: thumbs)
        registerLogging(["1.0"], on: try coordinator.manager("previews", store: cache))
        _ = try? coordinator.run()
        // Either the plan refuses, or previews' data is rebuilt: a level without its data is wrong.
        #expect(cache.contents.contains("previews v1") || cache.contents.contains("previews@1.0"),
                "contents \(cache.contents), states \(cache.recordedStates)")
    }

    @Test
    func appVersionHookRunsOnceWhenTwoRunsRace() throws {
        let store = Store([], records: ["prefs": MigrationRecord(baseline: "1", appVersion: "1")])
        let calls = EventLog()
        let firstEntered = DispatchSemaphore(value: 0), secondEntered = DispatchSemaphore(value: 0)
        func coordinator() throws -> MigrationCoordinator {
            let coordinator = MigrationCoordinator(appVersion: "2")
            let prefs = try coordinator.manager("prefs", store: store)
            registerLogging(["1"], on: prefs)
            prefs.onAppVersionChange { previous, current in
                calls.append("hook \(previous?.description ?? "nil") → \(current)")
                if calls.all.count == 1 {
                    firstEntered.signal()
                    // Once the first run is in its hook, the second run must not get into its own.
                    _ = secondEntered.wait(timeout: .now() + 2)
                } else {
                    secondEntered.signal()
                }
            }
            return coordinator
        }
        let first = try coordinator(), second = try coordinator()
        let firstDone = DispatchSemaphore(value: 0)
        first.run(queue: DispatchQueue(label: "LevelPolicyTests.first")) { _ in firstDone.signal() }
        #expect(firstEntered.waitForEvent())
        _ = try? second.run()
        #expect(firstDone.waitForEvent())
        #expect(calls.all == ["hook 1 → 2"])
        #expect(store.recordedStates["prefs"] == LevelState(level: "1", appVersion: "2"))
    }
}

/// A store that counts how often its levels are read.
final class CountingStore: MigrationStore, @unchecked Sendable {
    typealias Content = [String]
    private let inner = InMemoryStore<[String]>([])
    private let lock = NSLock()
    private var reads = 0
    var readCount: Int { lock.withLock { reads } }
    var description: String { "counting store" }

    func readRecords() throws -> [String: MigrationRecord] {
        lock.withLock { reads += 1 }
        return try inner.readRecords()
    }
    func transaction<T>(
        _ request: TransactionRequest, _ body: (inout [String: MigrationRecord], inout [String]) throws -> T
    ) throws -> T {
        try inner.transaction(body)
    }
}

@Suite struct SharedStoreReadTests {
    @Test func planningReadsASharedStoreOnce() throws {
        let store = CountingStore()
        let coordinator = MigrationCoordinator(appVersion: "1")
        for name in ["a", "b", "c"] {
            try coordinator.manager(name, store: store).register("1") { $0.append(name) }
        }
        _ = try coordinator.plan()
        #expect(store.readCount == 1)
    }
}
