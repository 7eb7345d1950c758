import Foundation
import Testing
import StoreMigrations
import TestSupport

/// ``FirstLaunchDecision/adopt(at:)``: a store with an earlier release's data and no records is
/// adopted at that release while planning, so that the plan shows it and writes nothing, and the
/// migrations after it run in the same run.
@Suite struct FirstLaunchAdoptionTests {
    typealias Store = InMemoryStore<[String]>

    /// A manager "library" on `store` with 1.0 to 2.0, adopted at `version` when the store holds
    /// legacy rows, run in full otherwise; `squash` adds a squash of 1.0 through 1.2, which
    /// stands alone for them when `originals` is false.
    func coordinator(
        _ store: Store, adoptingAt version: Version, squash: Bool = false, originals: Bool = true, decisions: EventLog? = nil
    ) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let library = try coordinator.manager("library", store: store)
        library.firstLaunchPolicy = .decide { store in
            decisions?.append("decided")
            return store.contents.isEmpty ? .runAll : .adopt(at: version)
        }
        registerLogging(originals ? ["1.0", "1.1", "1.2", "2.0"] : ["2.0"], on: library)
        if squash {
            library.squash(from: "1.0", through: "1.2") { $0.append("library 1.0-1.2") }
        }
        return coordinator
    }

    @Test func theAdoptedStoreRunsTheMigrationsAfterItsVersionAndThePlanWritesNothing() throws {
        let store = Store(["legacy row"])
        let decisions = EventLog()
        let plan = try coordinator(store, adoptingAt: "1.1", decisions: decisions).plan()
        #expect(plan.managers[0].firstLaunch == .adopt(at: "1.1"))
        #expect(plan.steps.map(\.id.description) == ["library:baseline@1.1", "library@1.2", "library@2.0"])
        #expect(plan.managers[0].pending == ["1.2", "2.0"])
        #expect(plan.managers[0].description.contains("first launch (adopt at 1.1)"))
        #expect(try store.readRecords().isEmpty, "planning wrote a record")

        try coordinator(store, adoptingAt: "1.1", decisions: decisions).run()
        #expect(store.contents == ["legacy row", "library@1.2", "library@2.0"])
        let record = try #require(try store.readRecords()["library"])
        #expect(record.baseline == "1.1")
        #expect(record.appliedVersions == ["1.2", "2.0"])
        // Once adopted the store has a level: the decision is never asked again.
        #expect(try coordinator(store, adoptingAt: "1.1", decisions: decisions).plan().isUpToDate)
        #expect(decisions.all.count == 2)
    }

    @Test func aNewStoreTakesTheSquashAndAnAdoptedOneInsideItsRangeRunsTheOriginals() throws {
        let new = Store([])
        try coordinator(new, adoptingAt: "1.0", squash: true).run()
        #expect(new.contents == ["library 1.0-1.2", "library@2.0"])

        let adopted = Store(["legacy row"])
        let plan = try coordinator(adopted, adoptingAt: "1.0", squash: true).plan()
        #expect(plan.steps.map(\.id.description) == ["library:baseline@1.0", "library@1.1", "library@1.2", "library@2.0"])
        try coordinator(adopted, adoptingAt: "1.0", squash: true).run()
        #expect(adopted.contents == ["legacy row", "library@1.1", "library@1.2", "library@2.0"])
    }

    @Test func withTheOriginalsRemovedAnAdoptionInsideTheSquashedRangeIsRefusedAndOnePastItRunsWhatFollows() throws {
        let inside = Store(["legacy row"], name: "library file")
        let refusal = MigrationError.squashedRangePartWay(
            manager: "library", store: "library file", squash: "1.2", applied: ["1.1"], originalsRegistered: false)
        #expect(throws: refusal) { try coordinator(inside, adoptingAt: "1.1", squash: true, originals: false).run() }
        #expect(inside.contents == ["legacy row"])
        #expect(try inside.readRecords().isEmpty)

        let past = Store(["legacy row"])
        try coordinator(past, adoptingAt: "1.2", squash: true, originals: false).run()
        #expect(past.contents == ["legacy row", "library@2.0"])
    }

    @Test func anAdoptionBelowASquashedRangeTakesTheSquash() throws {
        let store = Store(["legacy row"])
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let library = try coordinator.manager("library", store: store)
        library.firstLaunchPolicy = .decide { _ in .adopt(at: "0.9") }
        registerLogging(["0.9", "1.0", "1.1", "2.0"], on: library)
        library.squash(from: "1.0", through: "1.1") { $0.append("library 1.0-1.1") }
        try coordinator.run()
        #expect(store.contents == ["legacy row", "library 1.0-1.1", "library@2.0"])
        #expect(try store.readRecords()["library"]?.appliedVersions == ["1.0", "1.1", "2.0"])
    }

    @Test func anotherStoresDependencyAtOrBelowTheAdoptedVersionWaitsForTheAdoptionOnly() throws {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        coordinator.maxConcurrentStores = 1
        let library = try coordinator.manager("library", store: Store(["legacy row"]))
        let prefs = try coordinator.manager("prefs", store: Store([]))
        library.firstLaunchPolicy = .decide { _ in .adopt(at: "1.1") }
        registerLogging(["1.0", "1.1", "2.0"], on: library)
        registerLogging(["2.0"], on: prefs, dependsOn: ["2.0": [library.migration("1.0")]])
        let plan = try coordinator.plan()
        #expect(plan.steps.map(\.description) == [
            "library:baseline@1.1", "library@2.0 after library:baseline@1.1", "prefs@2.0 after library:baseline@1.1",
        ])
        try coordinator.run()
        #expect(prefs.store.contents == ["prefs@2.0"])
    }

    @Test func anAdoptionPastTheAppVersionIsATypedErrorThatWritesNothing() throws {
        let store = Store(["legacy row"], name: "library file")
        let expected = MigrationError.adoptedPastAppVersion(manager: "library", store: "library file", version: "3.0", appVersion: "2.0")
        #expect(throws: expected) { try coordinator(store, adoptingAt: "3.0").plan() }
        #expect(throws: expected) { try coordinator(store, adoptingAt: "3.0").run() }
        #expect(store.contents == ["legacy row"])
        #expect(try store.readRecords().isEmpty)
        #expect(expected.description == "The first-launch decision of manager \"library\" on library file adopts the store at 3.0, "
            + "past the app version 2.0. Nothing was migrated. Adopt it at the version of the release that wrote its data.")
    }

    @Test func anAdoptionAtALiteralThatIsNotAVersionIsATypedError() throws {
        let store = Store(["legacy row"])
        #expect(throws: MigrationError.invalidVersion(text: "1.x", reason: "'x' at offset 2 is not allowed here", manager: "library")) {
            try coordinator(store, adoptingAt: "1.x").run()
        }
        #expect(store.contents == ["legacy row"])
        #expect(try store.readRecords().isEmpty)
    }

    @Test func theDecisionEncodesAsTextAndEarlierReleasesDecodingsStillRead() throws {
        let decisions: [FirstLaunchDecision] = [.runAll, .baseline, .adopt(at: "1.2-1")]
        let encoded = try JSONEncoder().encode(decisions)
        #expect(String(decoding: encoded, as: UTF8.self) == #"["runAll","baseline","adopt at 1.2-1"]"#)
        #expect(try JSONDecoder().decode([FirstLaunchDecision].self, from: encoded) == decisions)
        for text in [#"["adopt at 1.x"]"#, #"["adopt"]"#, #"["baselines"]"#] {
            #expect(throws: DecodingError.self) { try JSONDecoder().decode([FirstLaunchDecision].self, from: Data(text.utf8)) }
        }

        let store = Store(["legacy row"])
        let plan = try coordinator(store, adoptingAt: "1.1").plan()
        let decoded = try JSONDecoder().decode(MigrationPlan.self, from: JSONEncoder().encode(plan))
        #expect(decoded.managers[0].firstLaunch == .adopt(at: "1.1"))
    }
}
