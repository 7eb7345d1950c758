import Foundation
import Testing
@testable import StoreMigrations

/// Friction peer suites met using the public API as a new user would, each fixed.
@Suite struct FrictionTests {
    @Test func everyAppVersionHookRunsInTheOrderItWasAdded() throws {
        let store = InMemoryStore<[String]>([])
        let calls = Locked<[String]>([])
        func launch(_ version: Version) throws {
            let coordinator = MigrationCoordinator(appVersion: version)
            let prefs = try coordinator.manager("prefs", store: store)
            prefs.onAppVersionChange { previous, current in calls.value.append("first \(previous?.description ?? "none")→\(current)") }
            prefs.onAppVersionChange { previous, current in calls.value.append("second \(previous?.description ?? "none")→\(current)") }
            try coordinator.run()
        }
        try launch("1.0")
        try launch("1.0")
        try launch("2.0")
        #expect(calls.value == ["first none→1.0", "second none→1.0", "first 1.0→2.0", "second 1.0→2.0"])
        #expect(try store.readRecords()["prefs"]?.appVersion == "2.0")
    }

    @Test func aThrowingHookStopsTheLaterOnesAndRecordsNothing() throws {
        let store = InMemoryStore<[String]>([])
        let calls = Locked<[String]>([])
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        let prefs = try coordinator.manager("prefs", store: store)
        prefs.onAppVersionChange { _, _ in calls.value.append("first") }
        prefs.onAppVersionChange { _, _ in throw SimulatedBodyFailure() }
        prefs.onAppVersionChange { _, _ in calls.value.append("third") }
        #expect(throws: MigrationRunError.self) { try coordinator.run() }
        #expect(calls.value == ["first"])
        #expect(try store.readRecords()["prefs"] == nil)
    }

    @Test func aRunErrorListsEveryFailureWithItsStep() throws {
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        let a = try coordinator.manager("a", store: InMemoryStore<[String]>([], name: "a store"))
        let b = try coordinator.manager("b", store: InMemoryStore<[String]>([], name: "b store"))
        a.register("1.0") { _ in throw TestFailure(message: "a broke") }
        b.register("1.0") { _ in throw TestFailure(message: "b broke") }
        let error = try #require(#expect(throws: MigrationRunError.self) { try coordinator.run() })
        #expect(error.errors.map(\.step.id.description) == ["a@1.0", "b@1.0"])
        #expect(error.errors.map { $0.error as? TestFailure } == [TestFailure(message: "a broke"), TestFailure(message: "b broke")])
        #expect(error.underlyingError as? TestFailure == TestFailure(message: "a broke"))
    }
}
