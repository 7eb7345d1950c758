import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

@Suite struct MigrationGraphTests {
    typealias Store = InMemoryStore<[String]>

    private func coordinator(_ app: Version = "2.0") -> MigrationCoordinator { MigrationCoordinator(appVersion: app) }

    @Test func duplicateManagerNameIsRejected() throws {
        let coordinator = coordinator()
        _ = try coordinator.manager("prefs", store: InMemoryStore([String]()))
        #expect(throws: MigrationError.duplicateManager(name: "prefs")) {
            try coordinator.manager("prefs", store: InMemoryStore([String]()))
        }
        #expect(MigrationError.duplicateManager(name: "prefs").description
            == "A manager named \"prefs\" already exists. Give each manager a unique name: levels are recorded under it.")
    }

    @Test func duplicateVersionIsRejectedEvenWithTrailingZeros() throws {
        let coordinator = coordinator()
        let prefs = try coordinator.manager("prefs", store: InMemoryStore([String]()))
        registerLogging(["1.0", "1.1", "1.0.0"], on: prefs)
        let error = try #require(#expect(throws: MigrationError.self) { try coordinator.plan() })
        #expect(error == .duplicateMigration(manager: "prefs", version: "1.0", alsoRegisteredAs: "1.0.0"))
        // Both spellings named, and why they are one version.
        #expect(error.description == "Manager \"prefs\" registers migration 1.0 twice, also as 1.0.0: versions compare "
            + "as numbers, component by component, missing components counting as zero (1.0 = 1.0.0 = 1.00). Merge the "
            + "two bodies or give one another version.")
        #expect(throws: MigrationError.duplicateMigration(manager: "prefs", version: "1", alsoRegisteredAs: "1")) { try coordinator.run() }
        let store = prefs.store
        #expect(store.contents.isEmpty)
    }

    @Test func unknownManagerNamesBothEnds() throws {
        let coordinator = coordinator()
        let library = try coordinator.manager("library", store: InMemoryStore([String]()))
        registerLogging(["2.0"], on: library, dependsOn: ["2.0": [.migration(manager: "prefs", version: "1.1")]])
        let error = MigrationError.unknownManager(
            dependency: .migration(manager: "prefs", version: "1.1"), of: .migration(manager: "library", version: "2.0"))
        #expect(throws: error) { try coordinator.plan() }
        #expect(error.description == "Migration library@2.0 depends on prefs@1.1, but there is no manager named \"prefs\". "
            + "Create that manager before planning, or fix the name.")
    }

    @Test func unknownVersionNamesBothEnds() throws {
        let coordinator = coordinator()
        let prefs = try coordinator.manager("prefs", store: InMemoryStore([String]()))
        let library = try coordinator.manager("library", store: InMemoryStore([String]()))
        registerLogging(["1.0", "1.2"], on: prefs)
        registerLogging(["2.0"], on: library, dependsOn: ["2.0": [prefs.migration("1.1")]])
        let error = MigrationError.unknownMigration(dependency: prefs.migration("1.1"), of: library.migration("2.0"))
        #expect(throws: error) { try coordinator.plan() }
        #expect(error.description.contains("manager \"prefs\" registers no migration 1.1"))
    }

    @Test func dependencyAheadOfTheAppVersionIsRejected() throws {
        let coordinator = coordinator("2.0")
        let prefs = try coordinator.manager("prefs", store: InMemoryStore([String]()))
        let library = try coordinator.manager("library", store: InMemoryStore([String]()))
        registerLogging(["1.0", "2.1"], on: prefs)
        registerLogging(["2.0"], on: library, dependsOn: ["2.0": [prefs.migration("2.1")]])
        #expect(throws: MigrationError.dependencyAhead(dependency: prefs.migration("2.1"), of: library.migration("2.0"), appVersion: "2.0")) {
            try coordinator.plan()
        }
    }

    @Test func aheadMigrationMayDependOnAheadMigration() throws {
        let coordinator = coordinator("2.0")
        let prefs = try coordinator.manager("prefs", store: InMemoryStore([String]()))
        let library = try coordinator.manager("library", store: InMemoryStore([String]()))
        registerLogging(["1.0", "2.1"], on: prefs)
        registerLogging(["3.0"], on: library, dependsOn: ["3.0": [prefs.migration("2.1")]])
        let plan = try coordinator.plan()
        #expect(plan.steps.map(\.id.description) == ["prefs@1.0"])
        #expect(plan.managers.map(\.ahead) == [["2.1"], ["3.0"]])
    }

    @Test func cycleIsListedInRunOrderFromItsSmallestNode() throws {
        // b@2 waits for a@1.1, and a@1.1 waits for b@2.
        for managerOrder in [["a", "b"], ["b", "a"]] {
            let coordinator = coordinator()
            var managers: [String: MigrationManager<InMemoryStore<[String]>>] = [:]
            for name in managerOrder { managers[name] = try coordinator.manager(name, store: InMemoryStore([String]())) }
            registerLogging(["1.0", "1.1"], on: managers["a"]!, dependsOn: ["1.1": [.migration(manager: "b", version: "2")]])
            registerLogging(["1", "2"], on: managers["b"]!, dependsOn: ["2": [.migration(manager: "a", version: "1.1")]])
            let cycle: [MigrationReference] = [.migration(manager: "a", version: "1.1"), .migration(manager: "b", version: "2"), .migration(manager: "a", version: "1.1")]
            #expect(throws: MigrationError.cycle(cycle)) { try coordinator.plan() }
            #expect(MigrationError.cycle(cycle).description
                == "Migrations form a cycle: a@1.1 → b@2 → a@1.1. Remove one of these dependencies: b@2 on a@1.1, a@1.1 on b@2.")
        }
    }

    @Test func cycleThroughTheVersionChain() throws {
        let coordinator = coordinator("3")
        let a = try coordinator.manager("a", store: InMemoryStore([String]()))
        registerLogging(["1", "2", "3"], on: a, dependsOn: ["1": [a.migration("3")]])
        let error = #expect(throws: MigrationError.cycle([a.migration("1"), a.migration("2"), a.migration("3"), a.migration("1")])) {
            try coordinator.plan()
        }
        // The version order cannot be removed: only the declared dependency is named.
        #expect(error?.description == "Migrations form a cycle: a@1 → a@2 → a@3 → a@1 (a@1 → a@2 and a@2 → a@3 are "
            + "version order). Remove the dependency of a@1 on a@3.")
    }

    @Test func cycleAcrossThreeStoresAmongValidNodes() throws {
        let coordinator = coordinator()
        let x = try coordinator.manager("x", store: InMemoryStore([String]()))
        let y = try coordinator.manager("y", store: InMemoryStore([String]()))
        let z = try coordinator.manager("z", store: InMemoryStore([String]()))
        registerLogging(["1", "2"], on: x, dependsOn: ["2": [z.migration("1")]])
        registerLogging(["1"], on: y, dependsOn: ["1": [x.migration("2")]])
        registerLogging(["1", "2"], on: z, dependsOn: ["1": [y.migration("1")]])
        let error = #expect(throws: MigrationError.cycle([x.migration("2"), y.migration("1"), z.migration("1"), x.migration("2")])) {
            try coordinator.plan()
        }
        #expect(error?.description == "Migrations form a cycle: x@2 → y@1 → z@1 → x@2. Remove one of these dependencies: "
            + "y@1 on x@2, z@1 on y@1, x@2 on z@1.")
    }

    @Test func appVersionWithSubMigrationIsRejected() throws {
        let coordinator = coordinator("2.0-1")
        _ = try coordinator.manager("prefs", store: InMemoryStore([String]()))
        #expect(throws: MigrationError.invalidAppVersion("2.0-1")) { try coordinator.plan() }
    }

    @Test func deepGraphsDoNotRecurse() throws {
        // 60,000 steps zig-zagging across two stores: any recursion per node would overflow.
        let coordinator = coordinator("100000")
        let a = try coordinator.manager("a", store: InMemoryStore(0))
        let b = try coordinator.manager("b", store: InMemoryStore(0))
        for index in 1...30_000 {
            a.register(Version(index), dependsOn: index > 1 ? [b.migration(Version(index - 1))] : []) { $0 += 1 }
            b.register(Version(index), dependsOn: [a.migration(Version(index))]) { $0 += 1 }
        }
        let plan = try coordinator.plan()
        #expect(plan.steps.count == 60_000)
        #expect(plan.waves.count == 60_000)
        #expect(plan.steps.first?.id.description == "a@1")
        #expect(plan.steps.last?.id.description == "b@30000")

        b.register(30_001, dependsOn: [a.migration(30_001)]) { $0 += 1 }
        a.register(30_001, dependsOn: [b.migration(30_000), b.migration(30_001)]) { $0 += 1 }
        #expect(throws: MigrationError.cycle([a.migration(30_001), b.migration(30_001), a.migration(30_001)])) { try coordinator.plan() }
    }

    // MARK: Duplicates, cycles and dependencies through sub-migrations

    @Test func duplicateSubMigrationsAreDetectedWithTrailingZerosAndLeadingZeros() throws {
        for (registered, duplicate) in [(["1.0-1", "1-1"], "1-1"), (["1-1", "1.0.0-01", "2"], "1.0.0-01"), (["2", "1.1-0", "1.1.0-0"], "1.1.0-0")] as [([Version], Version)] {
            let coordinator = MigrationCoordinator(appVersion: "2")
            let store = Store([])
            registerLogging(registered, on: try coordinator.manager("m", store: store))
            #expect(throws: MigrationError.duplicateMigration(manager: "m", version: duplicate, alsoRegisteredAs: duplicate)) { try coordinator.plan() }
            #expect(throws: MigrationError.self) { try coordinator.run() }
            #expect(store.contents.isEmpty)
        }
        // A sub-migration is not a duplicate of its base version, nor `-0` of `-00`'s neighbour.
        let coordinator = MigrationCoordinator(appVersion: "1")
        registerLogging(["1", "1-0", "1-1", "1.0.0.1"], on: try coordinator.manager("m", store: Store([])))
        #expect(try coordinator.plan().managers[0].pending == ["1", "1-0", "1-1"])
    }

    @Test func cycleThroughSubMigrationsIsListedFromItsSmallestNode() throws {
        // a@1.1 waits for b@1, which waits for a@1.1-1, which follows a@1.1.
        for order in [["a", "b"], ["b", "a"]] {
            let coordinator = MigrationCoordinator(appVersion: "2")
            var managers: [String: MigrationManager<Store>] = [:]
            for name in order { managers[name] = try coordinator.manager(name, store: Store([])) }
            let a = managers["a"]!, b = managers["b"]!
            registerLogging(["1.1-1", "1.1", "1.1-2"], on: a, dependsOn: ["1.1": [b.migration("1")]])
            registerLogging(["1"], on: b, dependsOn: ["1": [a.migration("1.1-1")]])
            let expected: [MigrationReference] = [a.migration("1.1"), a.migration("1.1-1"), b.migration("1"), a.migration("1.1")]
            #expect(throws: MigrationError.cycle(expected)) { try coordinator.plan() }
            #expect(MigrationError.cycle(expected).description == "Migrations form a cycle: a@1.1 → a@1.1-1 → b@1 → a@1.1 "
                + "(a@1.1 → a@1.1-1 is version order). Remove one of these dependencies: b@1 on a@1.1-1, a@1.1 on b@1.")
        }
    }

    @Test func selfDependencyIsACycleAndDependencyOnAnEarlierVersionIsNot() throws {
        let coordinator = MigrationCoordinator(appVersion: "2")
        let a = try coordinator.manager("a", store: Store([]))
        registerLogging(["1", "2"], on: a, dependsOn: ["2": [a.migration("2")]])
        let error = #expect(throws: MigrationError.cycle([a.migration("2"), a.migration("2")])) { try coordinator.plan() }
        #expect(error?.description == "Migrations form a cycle: a@2 → a@2. Remove the dependency of a@2 on itself.")

        let valid = MigrationCoordinator(appVersion: "2")
        let b = try valid.manager("b", store: Store([]))
        registerLogging(["1", "2"], on: b, dependsOn: ["2": [b.migration("1.0")]])
        #expect(try valid.plan().steps.map(\.id.description) == ["b@1", "b@2"])
    }

    @Test func dependencyValidationNamesBothEndsWithSubMigrations() throws {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let prefs = try coordinator.manager("prefs", store: Store([]))
        let library = try coordinator.manager("library", store: Store([]))
        registerLogging(["2.0", "2.0-1", "2.1-1"], on: prefs)
        // 2.0-1 is at the app version (a sub-migration of it), 2.1-1 is ahead.
        library.register("2.0-1", dependsOn: [prefs.migration("2.0-1")]) { _ in }
        #expect(try coordinator.plan().steps.last?.description == "library@2.0-1 after prefs@2.0-1")
        library.register("2.0-2", dependsOn: [prefs.migration("2.1-1")]) { _ in }
        #expect(throws: MigrationError.dependencyAhead(dependency: prefs.migration("2.1-1"), of: library.migration("2.0-2"), appVersion: "2.0")) {
            try coordinator.plan()
        }
    }
}
