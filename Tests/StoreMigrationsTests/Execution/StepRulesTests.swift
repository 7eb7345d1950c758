import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

/// The rules every kind of step obeys under the store's lock (``StepRules``), and the defects
/// found where two features met (issue 26): each kind finds a newer store under the lock, a
/// resumable step compares the fingerprint of its committed batches, a batch that does not move
/// is refused, a downgrade runs the app-version hook.
@Suite struct StepRulesTests {
    /// The table itself: every kind but a reset applies the newer-store policy; only batches
    /// compare the fingerprint of their progress.
    @Test func theTableListsEachKindsRules() {
        let rows = Step.Kind.allCases.map { kind -> String in
            let rules = StepRules.of(kind)
            return "\(kind) newer:\(rules.appliesNewerStorePolicy) progress:\(rules.comparesProgressFingerprint) done:\(rules.done)"
                + (rules.refusesRangePartWay ? " refusesRangePartWay" : "")
        }
        #expect(rows == [
            "migrate newer:true progress:false done:versionApplied",
            "batches newer:true progress:true done:versionApplied",
            "baseline newer:true progress:false done:anyLevel",
            "reset newer:false progress:false done:noLevelPast",
            "appVersionChange newer:true progress:false done:appVersionRecorded",
            "squash newer:true progress:false done:versionApplied refusesRangePartWay",
        ])
    }

    /// Issue 26, defect 1: an app 1.0 whose first step is a baseline plans against a new store;
    /// an app 2.0 migrates the store to 2.0 before 1.0's step runs. The baseline finds the store
    /// newer under the lock and fails, as every other kind does.
    @Test func aBaselineFindsTheStoreNewerUnderTheLockAndFails() throws {
        let store = NewerStoreUnderLockTests.RacedStore()
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        let manager = try coordinator.manager("m", store: store)
        manager.firstLaunchPolicy = .baseline
        manager.register("1.0") { _ in Issue.record("a baseline runs no body") }
        #expect(try coordinator.plan().steps.map(\.id.description) == ["m:baseline@1.0"])
        let report = try runReport(of: coordinator)
        #expect(!report.succeeded)
        let failure = try #require(report.failures.first?.error as? MigrationError)
        #expect(failure == .storeIsNewer(manager: "m", store: "raced store", level: "2.0", appVersion: "1.0"))
        #expect(try store.readRecords()["m"]?.baseline == nil)
    }

    /// Each kind that applies the policy, on a record past the app: `.fail` throws, `.ignore`
    /// ends the step as already applied without running it.
    @Test(arguments: [Step.Kind.migrate, .batches, .baseline, .appVersionChange, .squash])
    func everyKindAppliesTheNewerStorePolicy(kind: Step.Kind) throws {
        let record = MigrationRecord(applied: [AppliedMigration(version: "2.0")], appVersion: "2.0")
        #expect(throws: MigrationError.storeIsNewer(manager: "m", store: "s", level: "2.0", appVersion: "1.0")) {
            try StepExecutor.admit(kind, "1.0", record: record, checks: StepChecks(appVersion: "1.0"), manager: "m", store: "s")
        }
        let ignored = try StepExecutor.admit(
            kind, "1.0", record: record, checks: StepChecks(appVersion: "1.0", newerStorePolicy: .ignore), manager: "m", store: "s")
        #expect(ignored == .alreadyApplied(level: "2.0"))
    }

    /// Issue 26, defect 4: a body returning `.more` with the cursor it was given would commit
    /// empty batches for ever. The batch is refused with a typed error and rolled back; the
    /// batches before it stay.
    @Test func aBatchReturningTheCursorItWasGivenIsATypedError() throws {
        let store = InMemoryStore([String](), name: "s")
        #expect(throws: MigrationError.batchDidNotAdvance(
            migration: MigrationReference(manager: "m", version: "2"), store: "s", cursor: "10")) {
            try StepExecutor.migrateInBatches("2", of: "m", in: store, size: .fixed(10)) { log, batch in
                let next = batch.cursor == nil ? "10" : batch.cursor!
                // Without the rule this would run for ever: a bound, so that the test fails instead.
                if log.count >= 50 { throw SimulatedBodyFailure() }
                log.append("batch after \(batch.cursor ?? "start")")
                return .more(cursor: next, processed: 10)
            }
        }
        #expect(store.contents == ["batch after start"])
        let progress = try #require(try store.readRecords()["m"]?.progress(of: "2"))
        #expect(progress.cursor == "10" && progress.done == 10 && progress.batches == 1)
    }

    /// Issue 26, defect 3: a resumable step stopped part-way and relaunched with an edited body.
    /// The plan lists the change; under `.fail` the run refuses before any body; `.warn` resumes;
    /// a repair accepts the edit.
    @Test func aResumableStepPartWayIsComparedWithItsRecordedFingerprint() throws {
        let store = InMemoryStore([String](), name: "s")
        func launch(fingerprint: String, policy: FingerprintPolicy, stopAfter: Int?) throws -> (MigrationCoordinator, MigrationManager<InMemoryStore<[String]>>) {
            let coordinator = MigrationCoordinator(appVersion: "2")
            let manager = try coordinator.manager("m", store: store)
            manager.fingerprintPolicy = policy
            manager.registerResumable("2", batchSize: .fixed(10), options: .named("backfill", fingerprint: fingerprint)) { log, batch in
                let done = Int(batch.cursor ?? "0")!
                if let stopAfter, done >= stopAfter { throw SimulatedBodyFailure() }
                log.append("\(fingerprint) \(done)")
                return done + 10 >= 40 ? .finished(processed: 10) : .more(cursor: "\(done + 10)", processed: 10)
            }
            return (coordinator, manager)
        }
        let (first, _) = try launch(fingerprint: "v1", policy: .fail, stopAfter: 20)
        #expect(throws: MigrationRunError.self) { try first.run() }
        #expect(store.contents == ["v1 0", "v1 10"])

        let (edited, manager) = try launch(fingerprint: "v2", policy: .fail, stopAfter: nil)
        let change = try #require(try edited.plan().managers[0].changedFingerprints.first)
        #expect(change.isInProgress && change.migration == MigrationReference(manager: "m", version: "2"))
        #expect(change.recorded == MigrationFingerprint(of: "v1") && change.current == MigrationFingerprint(of: "v2"))
        #expect("\(change)".contains("in progress as"))
        #expect(throws: MigrationError.fingerprintsChanged(manager: "m", store: "s", changes: [change])) { try edited.run() }
        #expect(store.contents == ["v1 0", "v1 10"], "no body ran")

        #expect(try manager.repairFingerprints() == ["2"])
        #expect(try edited.plan().managers[0].changedFingerprints.isEmpty)
        #expect(try edited.run().succeeded)
        #expect(store.contents == ["v1 0", "v1 10", "v2 20", "v2 30"])
        #expect(try store.readRecords()["m"]?.appliedMigration("2")?.fingerprint == MigrationFingerprint(of: "v2"))
    }

    /// The check under the lock: another process's batches committed under another fingerprint
    /// after this run planned.
    @Test func theProgressFingerprintIsComparedUnderTheLockToo() throws {
        let progress = StepProgress(version: "2", cursor: "10", done: 10, batches: 1, elapsed: 0, fingerprint: MigrationFingerprint(of: "v1"))
        let record = MigrationRecord(inProgress: [progress])
        #expect(throws: MigrationError.self) {
            try StepExecutor.admit(
                .batches, "2", record: record, checks: StepChecks(appVersion: "2", fingerprintPolicy: .fail),
                fingerprint: MigrationFingerprint(of: "v2"), manager: "m", store: "s")
        }
        #expect(try StepExecutor.admit(
            .batches, "2", record: record, checks: StepChecks(appVersion: "2", fingerprintPolicy: .warn),
            fingerprint: MigrationFingerprint(of: "v2"), manager: "m", store: "s") == nil)
    }

    /// Issue 26, defect 5: after a launch as 1.0, a launch as 0.9 runs the hook for the change
    /// (told both versions), records 0.9, and reports the step applied.
    @Test func aDowngradeRunsTheHookAndRecordsTheOlderVersion() throws {
        let store = InMemoryStore([String](), name: "s")
        let hooks = EventLog()
        for appVersion: Version in ["1.0", "0.9"] {
            let coordinator = MigrationCoordinator(appVersion: appVersion)
            let manager = try coordinator.manager("m", store: store)
            manager.register("0.9") { $0.append("0.9") }
            manager.onAppVersionChange { previous, current in hooks.append("\(previous?.description ?? "none") -> \(current)") }
            let report = try coordinator.run()
            #expect(report.steps.last?.step.id.description == "m:appVersionChange@\(appVersion)")
            #expect(report.steps.last?.outcome == .applied)
        }
        #expect(hooks.all == ["none -> 1.0", "1.0 -> 0.9"])
        #expect(try store.readRecords()["m"]?.appVersion == "0.9")
    }
}
