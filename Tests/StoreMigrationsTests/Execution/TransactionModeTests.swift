import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

@Suite struct TransactionModeTests {
    @Test func aStoreWithoutNonTransactionalStepsRefusesOneBeforeItsBodyRuns() throws {
        let store = InMemoryStore<[String]>([], name: "memory")
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        let manager = try coordinator.manager("m", store: store)
        let ran = Locked(false)
        manager.register("0.9") { values in values.append("0.9") }
        manager.register("1.0", transaction: .none) { _ in ran.value = true }

        let error = #expect(throws: MigrationRunError.self) { try coordinator.run() }
        #expect(error?.report.failures.first?.error as? MigrationError
            == .transactionModeNotSupported(migration: manager.migration("1.0"), store: "memory"))
        #expect(!ran.value)
        #expect(store.contents == ["0.9"])
        #expect(try manager.appliedMigrations() == ["0.9"])
    }

    @Test func aNonTransactionalStepReachesTheStoreWithItsModeAndIsRecorded() throws {
        let store = CountingModesStore()
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        let manager = try coordinator.manager("m", store: store)
        manager.register("0.9") { values in values.append("0.9") }
        manager.register("1.0", transaction: .none) { values in values.append("1.0") }
        try coordinator.run()
        #expect(store.modes.value == [.transactional, .none])
        #expect(store.inner.contents == ["0.9", "1.0"])
        #expect(try manager.appliedMigrations() == ["0.9", "1.0"])
    }
}

/// A store that runs non-transactional steps like the others and notes which mode each asked for.
final class CountingModesStore: MigrationStore {
    let inner = InMemoryStore<[String]>([])
    let modes = Locked<[TransactionMode]>([])
    var description: String { "counting modes" }
    var runsStepsOutsideTransactions: Bool { true }

    func readRecords() throws -> [String: MigrationRecord] { try inner.readRecords() }

    func transaction<T>(
        _ request: TransactionRequest, _ body: (inout [String: MigrationRecord], inout [String]) throws -> T
    ) throws -> T {
        modes.value.append(request.mode)
        return try inner.transaction(body)
    }
}
