import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

/// A rolling deploy: an old app's run planned on a store that a newer app's process migrated
/// before the old run's step took the store's lock. Read again under the lock, the record shows
/// the store newer than the old app: the step must not run, and the run must not report success.
@Suite struct NewerStoreUnderLockTests {
    /// A store in which a newer app applies `2.0` for `manager` just before the first step's
    /// transaction: between this run's planning and its step, as another process would.
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
            let first = lock.withLock { () -> Bool in
                defer { raced = true }
                return !raced
            }
            if first {
                try inner.transaction { records, log in
                    records["m", default: MigrationRecord()].markApplied("2.0")
                    records["m"]?.appVersion = "2.0"
                    log.append("newer app applied 2.0")
                }
            }
            return try inner.transaction(body)
        }
    }

    @Test func theOldAppsStepFindsTheStoreNewerUnderTheLockAndFails() throws {
        let store = RacedStore()
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        let manager = try coordinator.manager("m", store: store)
        manager.register("1.0") { $0.append("old app's 1.0") }
        manager.onAppVersionChange { _, _ in Issue.record("the old app's hook ran") }
        #expect(try coordinator.plan().steps.map(\.id.description) == ["m@1.0", "m:appVersionChange@1.0"])
        let report = try runReport(of: coordinator)
        #expect(!report.succeeded)
        let failure = try #require(report.failures.first?.error as? MigrationError)
        #expect(failure == .storeIsNewer(manager: "m", store: "raced store", level: "2.0", appVersion: "1.0"))
        #expect(store.inner.contents == ["newer app applied 2.0"], "the old app's body never ran")
        #expect(try store.readRecords()["m"]?.appVersion == "2.0")
    }

    /// Under `.ignore`, a store found newer under the lock is left as the plan leaves a store
    /// newer when planned: nothing of the old app runs, and the step reads as already applied.
    @Test func theIgnorePolicyLeavesAStoreFoundNewerUnderTheLockAlone() throws {
        let store = RacedStore()
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        let manager = try coordinator.manager("m", store: store)
        manager.newerStorePolicy = .ignore
        manager.register("1.0") { $0.append("old app's 1.0") }
        let report = try coordinator.run()
        #expect(report.succeeded && report.steps.map(\.outcome) == [.alreadyApplied(level: "2.0")])
        #expect(store.inner.contents == ["newer app applied 2.0"])
    }

    /// The old app's last step is its app-version hook: found the store newer under the lock
    /// (the race test of issue 20 met it), it fails the run rather than report it applied.
    @Test func theOldAppsHookFindsTheStoreNewerUnderTheLockAndFails() throws {
        let store = RacedStore()
        try store.inner.transaction { records, _ in records["m"] = MigrationRecord(applied: [AppliedMigration(version: "1.0")], appVersion: "0.9") }
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        let manager = try coordinator.manager("m", store: store)
        manager.register("1.0") { _ in Issue.record("1.0 is applied") }
        manager.onAppVersionChange { _, _ in Issue.record("the old app's hook ran") }
        #expect(try coordinator.plan().steps.map(\.id.description) == ["m:appVersionChange@1.0"])
        let report = try runReport(of: coordinator)
        #expect(!report.succeeded)
        let failure = try #require(report.failures.first?.error as? MigrationError)
        #expect(failure == .storeIsNewer(manager: "m", store: "raced store", level: "2.0", appVersion: "1.0"))
        #expect(try store.readRecords()["m"]?.appVersion == "2.0")
    }

    /// A hook runs on every change of the app version, a downgrade too, as long as the store's
    /// level is one the older app can read: it is told both versions and the older one is recorded.
    @Test func anOlderAppsHookRunsForTheDowngradeAndRecordsItsVersion() throws {
        let store = InMemoryStore([String](), records: ["m": MigrationRecord(appVersion: "2.0")], name: "s")
        let hooks = EventLog()
        let outcome = try StepExecutor.appVersionChange(to: "1.5", of: "m", in: store, checks: StepChecks(appVersion: "1.5")) {
            previous, current in hooks.append("hook \(previous?.description ?? "none") -> \(current)")
        }
        #expect(outcome == .applied(level: nil))
        #expect(hooks.all == ["hook 2.0 -> 1.5"])
        #expect(try store.readRecords()["m"]?.appVersion == "1.5")
    }
}
