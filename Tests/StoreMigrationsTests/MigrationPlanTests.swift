import Foundation
import Testing
@testable import StoreMigrations

@Suite struct MigrationPlanTests {
    /// prefs@1.1 → library@2.0 and thumbs@2.0 → library@2.1 (which also waits for thumbs@2.0).
    private func diamond() throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: "2.1")
        let prefs = try coordinator.manager("prefs", store: InMemoryStore([String](), name: "prefs store"))
        let library = try coordinator.manager("library", store: InMemoryStore([String](), name: "library store"))
        let thumbs = try coordinator.manager("thumbs", store: InMemoryStore([String](), name: "thumbs store"))
        registerLogging(["2.1", "2.0"], on: library, dependsOn: ["2.0": [prefs.migration("1.1")], "2.1": [thumbs.migration("2.0")]])
        registerLogging(["2.0"], on: thumbs, dependsOn: ["2.0": [prefs.migration("1.1")]])
        registerLogging(["1.1"], on: prefs)
        return coordinator
    }

    @Test func diamondAcrossThreeStoresHasExactOrderAndWaves() throws {
        let plan = try diamond().plan()
        #expect(plan.steps.map(\.id.description) == ["prefs@1.1", "library@2.0", "thumbs@2.0", "library@2.1"])
        #expect(plan.waves.map { $0.map(\.id.description) } == [["prefs@1.1"], ["library@2.0", "thumbs@2.0"], ["library@2.1"]])
        #expect(plan.steps.map { $0.dependencies.map(\.description) } == [[], ["prefs@1.1"], ["prefs@1.1"], ["library@2.0", "thumbs@2.0"]])
        #expect(!plan.isUpToDate)
        #expect(plan.managers.map(\.pending) == [["1.1"], ["2.0", "2.1"], ["2.0"]])
        #expect(plan.managers.map(\.firstLaunch) == [.runAll, .runAll, .runAll])
    }

    @Test func planIsDeterministic() throws {
        let first = try diamond().plan()
        for _ in 0..<5 { #expect(try diamond().plan() == first) }
    }

    @Test func jsonRoundTripsAndIsStable() throws {
        let plan = try diamond().plan()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(plan)
        #expect(try JSONDecoder().decode(MigrationPlan.self, from: data) == plan)
        #expect(try encoder.encode(try diamond().plan()) == data)
        let json = String(decoding: data, as: UTF8.self)
        #expect(json.contains(#""dependencies":[{"action":"migrate","manager":"library","version":"2.0"},{"action":"migrate","manager":"thumbs","version":"2.0"}]"#))
        #expect(json.contains(#""appVersion":"2.1""#))
    }

    @Test func stepIdentifiersRoundTripForEveryAction() throws {
        let ids: [PlannedStep.ID] = [
            .init(manager: "a", action: .migrate, version: "1.1-2"),
            .init(manager: "odd:name@x", action: .baseline, version: "2.0"),
            .init(manager: "cache", action: .reset, version: nil),
            .init(manager: "prefs", action: .appVersionChange, version: "2"),
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(ids)
        #expect(String(decoding: data, as: UTF8.self) == """
            [{"action":"migrate","manager":"a","version":"1.1-2"},{"action":"baseline","manager":"odd:name@x","version":"2.0"},\
            {"action":"reset","manager":"cache"},{"action":"appVersionChange","manager":"prefs","version":"2"}]
            """)
        #expect(try JSONDecoder().decode([PlannedStep.ID].self, from: data) == ids)
        #expect(ids.map(\.description) == ["a@1.1-2", "odd:name@x:baseline@2.0", "cache:reset", "prefs:appVersionChange@2"])
    }

    @Test func graphvizHasEveryNodeAndEdge() throws {
        let dot = try diamond().plan().graphviz()
        #expect(dot.hasPrefix("digraph migrations {"))
        for node in ["prefs@1.1", "library@2.0", "thumbs@2.0", "library@2.1"] { #expect(dot.contains("    \"\(node)\";")) }
        for edge in [("prefs@1.1", "library@2.0"), ("prefs@1.1", "thumbs@2.0"), ("library@2.0", "library@2.1"), ("thumbs@2.0", "library@2.1")] {
            #expect(dot.contains("  \"\(edge.0)\" -> \"\(edge.1)\";"))
        }
        #expect(dot.components(separatedBy: " -> ").count - 1 == 4)
        #expect(dot.contains("label=\"library\""))
    }

    @Test func pendingAndAheadFollowTheLevelAndTheAppVersion() throws {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let store = InMemoryStore([String](), records: ["prefs": MigrationRecord(baseline: "1.0")])
        let prefs = try coordinator.manager("prefs", store: store)
        registerLogging(["3", "2.1", "2.0-1", "1.0", "0.9", "2.0", "1.5"], on: prefs)
        let plan = try coordinator.plan()
        #expect(plan.managers[0].level == "1.0")
        #expect(plan.managers[0].firstLaunch == nil)
        #expect(plan.managers[0].pending == ["1.5", "2.0", "2.0-1"])
        #expect(plan.managers[0].ahead == ["2.1", "3"])
        #expect(plan.steps.map(\.id.description) == ["prefs@1.5", "prefs@2.0", "prefs@2.0-1"])
    }

    @Test func satisfiedDependencyAddsNoEdge() throws {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let prefs = try coordinator.manager("prefs", store: InMemoryStore([String](), records: ["prefs": MigrationRecord(baseline: "1.1")]))
        let library = try coordinator.manager("library", store: InMemoryStore([String](), records: ["library": MigrationRecord(baseline: "1.0")]))
        registerLogging(["1.1", "2.0"], on: prefs)
        registerLogging(["1.0", "2.0"], on: library, dependsOn: ["2.0": [prefs.migration("1.1")]])
        let plan = try coordinator.plan()
        #expect(plan.steps.map(\.description) == ["prefs@2.0", "library@2.0"])
        #expect(plan.waves.count == 1)
    }

    @Test func appliedStepWithPendingDependencyIsADiagnostic() throws {
        // The library was migrated to 2.0, then the preferences file was deleted by the user.
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let prefs = try coordinator.manager("prefs", store: InMemoryStore([String]()))
        let library = try coordinator.manager("library", store: InMemoryStore([String](), records: ["library": MigrationRecord(baseline: "2.0")]))
        registerLogging(["1.1"], on: prefs)
        registerLogging(["2.0"], on: library, dependsOn: ["2.0": [prefs.migration("1.1")]])
        let plan = try coordinator.plan()
        #expect(plan.steps.map(\.id.description) == ["prefs@1.1"])
        #expect(plan.diagnostics == [.init(migration: library.migration("2.0"), dependency: prefs.migration("1.1"), dependencyLevel: nil)])
        #expect(plan.description.contains("note: library@2.0 is applied but its dependency prefs@1.1 is not (\"prefs\" is at no level)"))
        let report = try coordinator.run()
        #expect(report.diagnostics.count == 1)
        #expect(prefs.store.contents == ["prefs@1.1"])
        #expect(library.store.contents.isEmpty)
    }

    @Test func descriptionIsReadable() throws {
        let text = try diamond().plan().description
        #expect(text == """
            Migration plan to app version 2.1: 4 steps in 3 waves.
              prefs (prefs store): level none, first launch (runAll), pending 1.1
              library (library store): level none, first launch (runAll), pending 2.0, 2.1
              thumbs (thumbs store): level none, first launch (runAll), pending 2.0
              wave 1: prefs@1.1
              wave 2: library@2.0 after prefs@1.1; thumbs@2.0 after prefs@1.1
              wave 3: library@2.1 after library@2.0, thumbs@2.0
            """)
    }

    @Test func planRunsNothing() throws {
        let coordinator = try diamond()
        let log = EventLog()
        coordinator.observer = { _ in log.append("event") }
        _ = try coordinator.plan()
        _ = try coordinator.plan()
        #expect(log.all.isEmpty)
        let report = try coordinator.run()
        #expect(report.didRunAnything)
        #expect(try coordinator.plan().isUpToDate)
        #expect(try coordinator.run().didRunAnything == false)
    }
}
