import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

/// Applied migrations edited since they ran: reported by the plan, refused, warned about or
/// ignored by policy, and accepted by a repair; records written before fingerprints never count.
@Suite struct FingerprintPolicyTests {
    typealias Store = InMemoryStore<[String]>

    /// A launch of an app whose `library@1.1` is fingerprinted `text` and whose `1.2` is pending.
    private func launch(
        _ store: Store, fingerprint text: String, policy: FingerprintPolicy = .warn, appVersion: Version = "1.2"
    ) throws -> (coordinator: MigrationCoordinator, library: MigrationManager<Store>) {
        let coordinator = MigrationCoordinator(appVersion: appVersion)
        let library = try coordinator.manager("library", store: store)
        library.fingerprintPolicy = policy
        library.register("1.1", options: .named("add guids", fingerprint: text)) { log in log.append("1.1") }
        library.register("1.2") { log in log.append("1.2") }
        return (coordinator, library)
    }

    @Test func anEditedMigrationIsReportedByThePlanAndRecordedAnewByARepair() throws {
        let store = Store([], name: "library store")
        let (firstCoordinator, first) = try launch(store, fingerprint: "guid text", appVersion: "1.1")
        _ = try firstCoordinator.run()
        #expect(try first.record().applied.map(\.fingerprint) == [MigrationFingerprint(of: "guid text")])

        let (coordinator, edited) = try launch(store, fingerprint: "guid text, edited")
        let plan = try coordinator.plan()
        let change = FingerprintChange(
            migration: edited.migration("1.1"), name: "add guids", recorded: MigrationFingerprint(of: "guid text"),
            current: MigrationFingerprint(of: "guid text, edited"))
        #expect(plan.managers[0].changedFingerprints == [change])
        #expect(plan.description.contains("\n    edited since applied (warn): library@1.1 (add guids): applied as "
            + "\(MigrationFingerprint(of: "guid text")), now \(MigrationFingerprint(of: "guid text, edited"))"))
        #expect(plan.blockingErrors.isEmpty)
        let warned = try coordinator.run()
        #expect(warned.changedFingerprints == [change])
        #expect(warned.description.hasSuffix("\n  warning: edited since applied: \(change)"))
        #expect(store.contents == ["1.1", "1.2"])

        #expect(try edited.repairFingerprints() == ["1.1"])
        #expect(try edited.record().applied.map(\.fingerprint) == [MigrationFingerprint(of: "guid text, edited"), nil])
        #expect(try coordinator.plan().managers[0].changedFingerprints == [])
        #expect(try edited.repairFingerprints() == [])
    }

    @Test func failRefusesTheRunBeforeAnyBody() throws {
        let store = Store([], name: "library store")
        _ = try launch(store, fingerprint: "guid text", appVersion: "1.1").coordinator.run()
        let (coordinator, edited) = try launch(store, fingerprint: "guid text, edited", policy: .fail)
        let expected = MigrationError.fingerprintsChanged(
            manager: "library", store: "library store",
            changes: [FingerprintChange(
                migration: edited.migration("1.1"), name: "add guids", recorded: MigrationFingerprint(of: "guid text"),
                current: MigrationFingerprint(of: "guid text, edited"))])
        #expect(try coordinator.plan().blockingErrors == [expected])
        #expect(throws: expected) { try coordinator.run() }
        #expect(store.contents == ["1.1"], "1.2 must not run")
        #expect(expected.description == "Manager \"library\" on library store has an applied migration edited since it ran: "
            + "library@1.1 (add guids): applied as \(MigrationFingerprint(of: "guid text")), now "
            + "\(MigrationFingerprint(of: "guid text, edited")). Nothing was migrated. Restore its text as it was applied, "
            + "or accept the edit with repairFingerprints() on manager \"library\".")

        try edited.repairFingerprints()
        _ = try coordinator.run()
        #expect(store.contents == ["1.1", "1.2"])
    }

    @Test func ignoreNeitherComparesNorReports() throws {
        let store = Store([], name: "library store")
        _ = try launch(store, fingerprint: "guid text", appVersion: "1.1").coordinator.run()
        let coordinator = try launch(store, fingerprint: "edited", policy: .ignore).coordinator
        #expect(try coordinator.plan().managers[0].changedFingerprints == [])
        _ = try coordinator.run()
        #expect(store.contents == ["1.1", "1.2"])
    }

    @Test func recordsOfThePreviousReleaseAndOfAnotherAlgorithmAreNeverAChange() throws {
        for recorded in [nil, MigrationFingerprint(stored: "v0:0123456789")] {
            let store = Store(
                ["1.1"], records: ["library": MigrationRecord(applied: [AppliedMigration(version: "1.1", fingerprint: recorded)])],
                name: "library store")
            let (coordinator, library) = try launch(store, fingerprint: "guid text", policy: .fail)
            #expect(try coordinator.plan().managers[0].changedFingerprints == [])
            _ = try coordinator.run()
            #expect(store.contents == ["1.1", "1.2"])
            // A repair records today's fingerprint, so that later edits are found.
            #expect(try library.repairFingerprints() == ["1.1"])
            #expect(try library.record().applied[0].fingerprint == MigrationFingerprint(of: "guid text"))
        }
    }

    /// Edited migrations are listed by version, the applied and the part-way ones together: a
    /// deferred resumable `1.1` part-way below an applied `1.2` comes first (the soak of issue 26
    /// found them listed applied first).
    @Test func changesAreListedByVersionWhetherAppliedOrPartWay() throws {
        let store = Store([], name: "library store")
        try store.updateRecord(of: "library") { record in
            record.markApplied("1.2", fingerprint: MigrationFingerprint(of: "1.2 as applied"))
            record.setProgress(StepProgress(
                version: "1.1", cursor: "10", done: 10, batches: 1, elapsed: 0, fingerprint: MigrationFingerprint(of: "1.1 as begun")))
        }
        let coordinator = MigrationCoordinator(appVersion: "1.2")
        let library = try coordinator.manager("library", store: store)
        library.registerResumable("1.1", deferred: true, options: .named("fill guids", fingerprint: "1.1 edited")) { _, _ in
            .finished(processed: 0)
        }
        library.register("1.2", options: .named("index guids", fingerprint: "1.2 edited")) { _ in }
        let changes = try coordinator.plan().managers[0].changedFingerprints
        #expect(changes.map(\.migration.version) == ["1.1", "1.2"], "\(changes)")
        #expect(changes.map(\.isInProgress) == [true, false])
    }
}
