import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

/// A migration's name, given at registration, wherever a migration is shown: the plan's text,
/// JSON and DOT, reports, events, records and errors.
@Suite struct MigrationNameTests {
    typealias Store = InMemoryStore<[String]>

    /// library@1.1 named, library@1.2 not, prefs@1.0 named and depended on by library@1.2.
    private func setup() throws -> (MigrationCoordinator, MigrationManager<Store>, MigrationManager<Store>) {
        let coordinator = MigrationCoordinator(appVersion: "1.2")
        let prefs = try coordinator.manager("prefs", store: Store([], name: "prefs store"))
        let library = try coordinator.manager("library", store: Store([], name: "library store"))
        library.register("1.1", options: .named("add guids to events")) { log in log.append("1.1") }
        library.register("1.2", dependsOn: [prefs.migration("1.0")]) { log in log.append("1.2") }
        prefs.register("1.0", options: .named("rename showHelp")) { log in log.append("1.0") }
        return (coordinator, prefs, library)
    }

    @Test func thePlanTextNamesEachNamedStep() throws {
        let (coordinator, _, _) = try setup()
        #expect(try coordinator.plan().description == """
            Migration plan to app version 1.2: 3 steps in 2 waves.
              prefs (prefs store): level none, first launch (runAll), pending 1.0
              library (library store): level none, first launch (runAll), pending 1.1, 1.2
              wave 0: prefs@1.0 (rename showHelp); library@1.1 (add guids to events)
              wave 1: library@1.2 after library@1.1, prefs@1.0
            """)
    }

    @Test func theStepsJSONCarriesTheNameAndReadsBack() throws {
        let (coordinator, _, _) = try setup()
        let plan = try coordinator.plan()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        #expect(String(decoding: try encoder.encode(plan.steps), as: UTF8.self) == """
            [{"action":"migrate","dependencies":[],"manager":"prefs","name":"rename showHelp","version":"1.0","wave":0},\
            {"action":"migrate","dependencies":[],"manager":"library","name":"add guids to events","version":"1.1","wave":0},\
            {"action":"migrate","dependencies":[{"action":"migrate","manager":"library","version":"1.1"},\
            {"action":"migrate","manager":"prefs","version":"1.0"}],"manager":"library","version":"1.2","wave":1}]
            """)
        let decoded = try JSONDecoder().decode(MigrationPlan.self, from: try encoder.encode(plan))
        #expect(decoded == plan)
        #expect(decoded.steps.map(\.name) == ["rename showHelp", "add guids to events", nil])
        #expect(decoded.description == plan.description)
    }

    @Test func thePlansJSONWithANameAndAnEditedMigrationIsExact() throws {
        let recorded = MigrationFingerprint(of: "old")
        let store = Store(
            ["1.0"], records: ["library": MigrationRecord(applied: [AppliedMigration(version: "1.0", fingerprint: recorded)])],
            name: "library store")
        let coordinator = MigrationCoordinator(appVersion: "1.1")
        let library = try coordinator.manager("library", store: store)
        library.register("1.0", options: .named("create notes", fingerprint: "new")) { _ in }
        library.register("1.1", options: .named("add guids")) { _ in }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let plan = try coordinator.plan()
        #expect(String(decoding: try encoder.encode(plan), as: UTF8.self) == """
            {"appVersion":"1.1","diagnostics":[],"managers":[{"ahead":[],"changedFingerprints":[{"current":"\(MigrationFingerprint(of: "new").rawValue)",\
            "migration":{"manager":"library","version":"1.0"},"name":"create notes","recorded":"\(recorded.rawValue)"}],\
            "createsStore":false,"deferred":[],"fingerprintPolicy":"warn","heldBehindPostDeploy":[],"inProgress":[],"late":[],"lateNames":{},"latePolicy":"run","level":"1.0","name":"library",\
            "pending":["1.1"],"postDeploy":[],"store":"library store"}],"postDeploySteps":[],"steps":[{"action":"migrate","dependencies":[],"manager":"library",\
            "name":"add guids","version":"1.1","wave":0}]}
            """)
        #expect(plan.description == """
            Migration plan to app version 1.1: 1 step in 1 wave.
              library (library store): level 1.0, pending 1.1
                edited since applied (warn): library@1.0 (create notes): applied as \(recorded), now \(MigrationFingerprint(of: "new"))
              wave 0: library@1.1 (add guids)
            """)
    }

    @Test func theDOTLabelsNamedStepsWithTheirName() throws {
        let (coordinator, _, _) = try setup()
        let dot = try coordinator.plan().graphviz()
        #expect(dot.contains(#"    "prefs@1.0" [label="prefs@1.0\nrename showHelp"];"#))
        #expect(dot.contains(#"    "library@1.1" [label="library@1.1\nadd guids to events"];"#))
        #expect(dot.contains(#"    "library@1.2";"#))
    }

    @Test func reportsEventsAndRecordsKeepTheName() throws {
        let (coordinator, prefs, library) = try setup()
        let events = EventLog()
        coordinator.observer = { event in
            if case .started = event { events.append(event.description) }
        }
        let report = try coordinator.run()
        #expect(events.all.sorted() == [
            "library@1.1 (add guids to events): started", "library@1.2: started", "prefs@1.0 (rename showHelp): started",
        ])
        #expect(report.steps.map { $0.description.components(separatedBy: ": applied")[0] }
            == ["prefs@1.0 (rename showHelp)", "library@1.1 (add guids to events)", "library@1.2"])
        #expect(try library.record().applied.map(\.name) == ["add guids to events", nil])
        #expect(try prefs.record().applied.map(\.name) == ["rename showHelp"])
        #expect(try library.record().applied[0].description.hasPrefix("1.1 (add guids to events) at "))
    }

    @Test func aFailedNamedStepIsNamedInTheRunError() throws {
        let coordinator = MigrationCoordinator(appVersion: "1")
        let library = try coordinator.manager("library", store: Store([], name: "library store"))
        library.register("1", options: .named("add guids")) { _ in throw TestFailure(message: "disk full") }
        do {
            _ = try coordinator.run()
            Issue.record("the run succeeded")
        } catch let error as MigrationRunError {
            #expect("\(error)".hasPrefix("Migration library@1 (add guids) on library store failed: disk full."), "\(error)")
        }
    }

    @Test func aStoresOwnErrorNamesTheMigrationItRanFor() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("names-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        let coordinator = MigrationCoordinator(appVersion: "1.1")
        let settings = try coordinator.manager("settings", store: PreferencesStore(url: file))
        settings.register("1.0") { _ in }
        settings.register("1.1", options: .named("move the theme")) { (prefs: inout Preferences) in
            try prefs.set([:] as PreferenceValue, for: [PreferencesStore.levelsKey])
        }
        do {
            _ = try coordinator.run()
            Issue.record("the run succeeded")
        } catch let error as MigrationRunError {
            let underlying = try #require(error.underlyingError as? PreferencesStoreError)
            #expect(underlying == .reservedKey(file: file.path, migration: .migration(manager: "settings", version: "1.1")))
            #expect("\(underlying)".hasPrefix("Migration settings@1.1 (move the theme) stored a value under"), "\(underlying)")
        }
    }

    @Test func lateMigrationsAreNamedInThePlanAndInTheError() throws {
        let store = Store([], records: ["library": MigrationRecord(applied: [AppliedMigration(version: "1.2")])], name: "library store")
        let coordinator = MigrationCoordinator(appVersion: "1.2")
        let library = try coordinator.manager("library", store: store)
        library.lateMigrationPolicy = .fail
        library.register("1.0", options: .named("create notes")) { _ in }
        library.register("1.1") { _ in }
        library.register("1.2") { _ in }
        let plan = try coordinator.plan()
        #expect(plan.managers[0].lateNames == ["1.0": "create notes"])
        #expect(plan.managers[0].description == "library (library store): level 1.2, nothing pending; late (fail): 1.0 (create notes), 1.1")
        #expect(plan.description.split(separator: "\n").contains("  \(plan.managers[0])"), "\(plan)")
        let error = MigrationError.lateMigrations(
            manager: "library", store: "library store", versions: ["1.0", "1.1"], level: "1.2", names: ["1.0": "create notes"])
        #expect(plan.blockingErrors == [error])
        #expect(error.description.hasPrefix(
            "Manager \"library\" on library store is at level 1.2, but library@1.0 (create notes), library@1.1 were registered"))
        #expect(throws: error) { try coordinator.run() }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = String(decoding: try encoder.encode(plan), as: UTF8.self)
        #expect(json.contains(#""late":["1.0","1.1"],"lateNames":{"1.0":"create notes"},"latePolicy":"fail""#), "\(json)")
        #expect(try JSONDecoder().decode(MigrationPlan.self, from: Data(json.utf8)) == plan)
    }

    @Test func anEditedMigrationIsNamedOnceWhateverItsReferenceCarries() {
        let recorded = MigrationFingerprint(of: "old"), current = MigrationFingerprint(of: "new")
        for reference in [
            MigrationReference(manager: "library", version: "1.0"), MigrationReference(manager: "library", version: "1.0", name: "create notes"),
        ] {
            let change = FingerprintChange(migration: reference, name: "create notes", recorded: recorded, current: current)
            #expect(change.description == "library@1.0 (create notes): applied as \(recorded), now \(current)")
        }
    }
}
