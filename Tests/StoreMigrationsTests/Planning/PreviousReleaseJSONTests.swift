import Foundation
import Testing
@testable import StoreMigrations

/// Plans, reports and records kept as JSON by the previous release (commit 5a43946, before
/// this round's fields: stores created, deferred, post-deploy and in-progress migrations,
/// names, fingerprints) still decode. Each plan equals the plan this release makes of the same
/// scenario, the scenario `Tests/Fixtures/PreviousRelease/README.txt` describes.
@Suite struct PreviousReleaseJSONTests {
    typealias Values = [String: Int]

    private func fixture<T: Decodable>(_ name: String, as type: T.Type = T.self) throws -> T {
        let url = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/PreviousRelease/\(name)")
        return try JSONDecoder().decode(T.self, from: Data(contentsOf: url))
    }

    /// prefs 1.0, 1.1, 2.0, 2.1 (ahead) and a hook; library 1.0, 1.5, 1.5-1, 2.0 after
    /// prefs@1.1; cache 1.0, 1.8 baselined, sharing library's store.
    private func firstLaunch() throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let libraryStore = InMemoryStore<Values>([:], name: "library-store")
        let prefs = try coordinator.manager("prefs", store: InMemoryStore<Values>([:], name: "prefs-store"))
        let library = try coordinator.manager("library", store: libraryStore)
        let cache = try coordinator.manager("cache", store: libraryStore)
        cache.firstLaunchPolicy = .baseline
        for version: Version in ["1.0", "1.1", "2.0", "2.1"] { prefs.register(version) { _ in } }
        prefs.onAppVersionChange { _, _ in }
        for version: Version in ["1.0", "1.5", "1.5-1"] { library.register(version) { _ in } }
        library.register("2.0", dependsOn: [prefs.migration("1.1")]) { _ in }
        cache.register("1.0") { _ in }
        cache.register("1.8") { _ in }
        return coordinator
    }

    @Test func aFirstLaunchPlanDecodesAsThisReleasePlansIt() throws {
        let coordinator = try firstLaunch()
        let old: MigrationPlan = try fixture("plan-first-launch.json")
        #expect(old == (try coordinator.plan()))
        #expect(old.managers.map(\.createsStore) == [false, false, false])
        #expect(old.managers.allSatisfy { $0.deferred.isEmpty && $0.postDeploy.isEmpty && $0.changedFingerprints.isEmpty })
        #expect(old.postDeploySteps.isEmpty)
        _ = try coordinator.run()
        #expect((try fixture("plan-up-to-date.json", as: MigrationPlan.self)) == (try coordinator.plan()))
    }

    @Test func aPlanWithLateMigrationsAndADiagnosticDecodesAsThisReleasePlansIt() throws {
        let prefsStore = InMemoryStore<Values>([:], name: "prefs-store")
        let libraryStore = InMemoryStore<Values>([:], name: "library-store")
        let cacheStore = InMemoryStore<Values>([:], name: "cache-store", rebuiltValue: [:])
        let first = MigrationCoordinator(appVersion: "1.5")
        for (name, store, versions) in [("prefs", prefsStore, ["1.0", "1.5"]), ("library", libraryStore, ["1.0", "1.5"]),
                                        ("cache", cacheStore, ["1.0", "1.4"])] as [(String, InMemoryStore<Values>, [Version])] {
            let manager = try first.manager(name, store: store)
            for version in versions { manager.register(version) { _ in } }
            if name == "prefs" { manager.onAppVersionChange { _, _ in } }
        }
        _ = try first.run()
        let second = MigrationCoordinator(appVersion: "2.0")
        let prefs = try second.manager("prefs", store: prefsStore)
        let library = try second.manager("library", store: libraryStore)
        let cache = try second.manager("cache", store: cacheStore)
        for version: Version in ["1.0", "1.2", "1.5", "2.0"] { prefs.register(version) { _ in } }
        prefs.onAppVersionChange { _, _ in }
        library.lateMigrationPolicy = .ignore
        library.register("1.0") { _ in }
        library.register("1.3") { _ in }
        library.register("1.5", dependsOn: [prefs.migration("1.2")]) { _ in }
        library.register("2.0", dependsOn: [prefs.migration("2.0")]) { _ in }
        library.register("2.1") { _ in }
        cache.lateMigrationPolicy = .fail
        cache.newerStorePolicy = .reset
        for version: Version in ["1.0", "1.1", "1.4", "1.9"] { cache.register(version) { _ in } }

        let old: MigrationPlan = try fixture("plan-late-and-progress.json")
        #expect(old == (try second.plan()))
        #expect(old.managers.map(\.late) == [["1.2"], ["1.3"], ["1.1"]])
        #expect(old.managers.allSatisfy { $0.lateNames.isEmpty })
        #expect(old.blockingErrors == [.lateMigrations(manager: "cache", store: "cache-store", versions: ["1.1"], level: "1.4")])
        #expect(old.diagnostics.count == 1)
    }

    @Test func aPlanOfNewerStoresDecodesAsThisReleasePlansIt() throws {
        func store(_ manager: String, _ name: String, rebuildable: Bool) -> InMemoryStore<Values> {
            InMemoryStore<Values>(
                [:], records: [manager: MigrationRecord(applied: [AppliedMigration(version: "1.0"), AppliedMigration(version: "3.0")])],
                name: name, rebuiltValue: rebuildable ? [:] : nil)
        }
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let cache = try coordinator.manager("cache", store: store("cache", "cache-store", rebuildable: true))
        let prefs = try coordinator.manager("prefs", store: store("prefs", "prefs-store", rebuildable: false))
        cache.newerStorePolicy = .reset
        for version: Version in ["1.0", "2.0", "3.0"] { cache.register(version) { _ in } }
        for version: Version in ["1.0", "3.0"] { prefs.register(version) { _ in } }
        #expect((try fixture("plan-newer-store.json", as: MigrationPlan.self)) == (try coordinator.plan()))
    }

    @Test func reportsDecodeWithTheirOutcomesAndLevels() throws {
        let success: MigrationReport = try fixture("report-success.json")
        #expect(success.succeeded)
        #expect(success.steps.count == 9)
        #expect(success.managers.map(\.levelAfter) == ["2.0", "2.0", "2.0"])
        #expect(success.managers.allSatisfy { !$0.createdStore && $0.ahead.isEmpty })
        #expect(success.changedFingerprints.isEmpty)

        let failure: MigrationReport = try fixture("report-failure.json")
        #expect(failure.steps.map(\.id.description) == ["prefs@1.0", "library@1.0", "prefs@1.1", "prefs@2.0", "library@2.0"])
        #expect(failure.steps.map(\.outcome) == [
            .applied, .applied, .failed(message: "prefs 1.1 broke"),
            .skipped(because: PlannedStep.ID(manager: "prefs", action: .migrate, version: "1.1")),
            .skipped(because: PlannedStep.ID(manager: "prefs", action: .migrate, version: "1.1")),
        ])
        let stopped: MigrationReport = try fixture("report-stop-on-failure.json")
        #expect(stopped.steps.contains { $0.outcome == .cancelled })
        #expect((try fixture("report-up-to-date.json", as: MigrationReport.self)).steps.isEmpty)
    }

    @Test func recordsReferencesAndPoliciesDecode() throws {
        let record: MigrationRecord = try fixture("MigrationRecord.json")
        #expect(record.applied.map(\.version) == ["1.0", "1.1-2", "2.0"])
        #expect(record.applied.map(\.name) == [nil, nil, nil])
        #expect(record.applied.map(\.fingerprint) == [nil, nil, nil])
        #expect(record.applied[0].appliedAt == Date(timeIntervalSinceReferenceDate: 800_000_000.5))
        #expect(record.baseline == "0.9")
        #expect(record.appVersion == "2.0")
        #expect((try fixture("MigrationRecord-baseline.json", as: MigrationRecord.self)).level == "2.0")
        #expect((try fixture("MigrationRecord-inmemory.json", as: MigrationRecord.self)).applied.map(\.version) == ["1.0", "1.1", "2.0"])
        #expect((try fixture("AppliedMigration.json", as: AppliedMigration.self)).duration == 1.5)
        let references: [MigrationReference] = try fixture("MigrationReference.json")
        #expect(references.map(\.description) == ["library@2.0", "prefs@1.1-1"])
        #expect((try fixture("Version.json", as: [Version].self)) == ["1.0", "1.1-2", "7", "2.0.1"])
        #expect((try fixture("StoreWait.json", as: [StoreWait].self)).map(\.holderProcessID) == [4127, nil])

        struct Policies: Decodable {
            let firstLaunchDecisions: [FirstLaunchDecision]
            let newerStorePolicies: [NewerStorePolicy]
            let lateMigrationPolicies: [LateMigrationPolicy]
            let failurePolicies: [FailurePolicy]
            let transactionModes: [TransactionMode]
            let plannedStepActions: [PlannedStep.Action]
        }
        let policies: Policies = try fixture("enums.json")
        #expect(policies.lateMigrationPolicies == [.run, .fail, .ignore])
        #expect(policies.plannedStepActions == [.migrate, .baseline, .reset, .appVersionChange])
        #expect(policies.transactionModes == [.transactional, .none])
    }
}
