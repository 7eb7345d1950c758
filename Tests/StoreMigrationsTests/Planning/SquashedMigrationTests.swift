import Foundation
import Testing
import StoreMigrations
import TestSupport

/// Squashed migrations (issue 29, item 1): the path each store takes through the replaced range,
/// what it records, dependencies into the range, removing the originals, and bad ranges.
@Suite struct SquashedMigrationTests {
    let library = InMemoryStore<[String]>([], name: "library store")
    let prefs = InMemoryStore<[String]>([], name: "prefs store")
    let log = EventLog()

    /// A release of the app: library's 1.0, 1.1 and 1.2 (named, fingerprinted) unless
    /// `originals` is false, their squash when `squash`, library@2.0, and prefs@2.0 after
    /// library@1.1 (after library@1.2 once the originals are gone). One store at a time, so that
    /// steps run in plan order.
    func release(_ appVersion: Version, originals: Bool = true, squash: Bool = true) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: appVersion)
        coordinator.maxConcurrentStores = 1
        let library = try coordinator.manager("library", store: library)
        let prefs = try coordinator.manager("prefs", store: prefs)
        let log = log
        if originals {
            for version in ["1.0", "1.1", "1.2"] as [Version] {
                library.register(version, options: .named("step \(version)", fingerprint: "v\(version)")) {
                    $0.append("library@\(version)")
                    log.append("library@\(version)")
                }
            }
        }
        if squash {
            library.squash(from: "1.0", through: "1.2", options: .named("up to 1.2")) {
                $0.append("library 1.0-1.2")
                log.append("library:squash@1.2")
            }
        }
        library.register("2.0") {
            $0.append("library@2.0")
            log.append("library@2.0")
        }
        prefs.register("2.0", dependsOn: [library.migration(originals ? "1.1" : "1.2")]) {
            $0.append("prefs@2.0")
            log.append("prefs@2.0")
        }
        return coordinator
    }

    func libraryRecord() throws -> MigrationRecord {
        try library.readRecords()["library"] ?? MigrationRecord()
    }

    static let squashID = PlannedStep.ID(manager: "library", action: .squash, version: "1.2")

    @Test func aFreshStoreRunsTheSquashOnceAndRecordsEveryReplacedMigration() throws {
        let coordinator = try release("2.0")
        let plan = try coordinator.plan()
        #expect(plan.steps.map(\.id) == [Self.squashID, stepID("library", "2.0"), stepID("prefs", "2.0")])
        #expect(plan.steps[0].name == "up to 1.2")
        #expect(plan.managers[0].pending == ["1.0", "1.1", "1.2", "2.0"])
        // The dependency on library@1.1, inside the range, waits for the squash.
        #expect(plan.steps[2].dependencies == [Self.squashID])
        #expect(plan.description.contains("library:squash@1.2 (up to 1.2)"))
        let json = String(decoding: try JSONEncoder().encode(plan), as: UTF8.self)
        #expect(json.contains("\"action\":\"squash\""))
        #expect(try JSONDecoder().decode(MigrationPlan.self, from: Data(json.utf8)) == plan)

        #expect(try coordinator.run().succeeded)
        #expect(log.all == ["library:squash@1.2", "library@2.0", "prefs@2.0"])
        #expect(library.contents == ["library 1.0-1.2", "library@2.0"])
        let record = try libraryRecord()
        #expect(record.appliedVersions == ["1.0", "1.1", "1.2", "2.0"])
        #expect(record.applied.map(\.name) == ["step 1.0", "step 1.1", "step 1.2", nil])
        #expect(record.applied.map(\.fingerprint) == ["v1.0", "v1.1", "v1.2", nil].map { $0.map(MigrationFingerprint.init(of:)) })
        #expect(try release("2.0").plan().isUpToDate)
    }

    @Test func aStorePartWayRunsTheRemainingOriginals() throws {
        #expect(try release("1.0", squash: false).run().succeeded)
        #expect(log.all == ["library@1.0"])
        let coordinator = try release("2.0")
        let plan = try coordinator.plan()
        // By wave: prefs@2.0 waits for library@1.1 only.
        #expect(plan.steps.map(\.id) == [
            stepID("library", "1.1"), stepID("library", "1.2"), stepID("prefs", "2.0"), stepID("library", "2.0"),
        ])
        #expect(plan.steps[2].dependencies == [stepID("library", "1.1")])
        #expect(try coordinator.run().succeeded)
        #expect(log.all == ["library@1.0", "library@1.1", "library@1.2", "prefs@2.0", "library@2.0"])
        #expect(library.contents == ["library@1.0", "library@1.1", "library@1.2", "library@2.0"])
        #expect(try libraryRecord().appliedVersions == ["1.0", "1.1", "1.2", "2.0"])
    }

    @Test func aStorePastTheRangeRunsNothingOfIt() throws {
        #expect(try release("1.2", squash: false).run().succeeded)
        let coordinator = try release("2.0")
        #expect(try coordinator.plan().steps.map(\.id) == [stepID("library", "2.0"), stepID("prefs", "2.0")])
        #expect(try coordinator.run().succeeded)
        #expect(log.all == ["library@1.0", "library@1.1", "library@1.2", "prefs@2.0", "library@2.0"]
            || log.all == ["library@1.0", "library@1.1", "library@1.2", "library@2.0", "prefs@2.0"])
        #expect(library.contents == ["library@1.0", "library@1.1", "library@1.2", "library@2.0"])
    }

    /// A store with a range's migration in progress (a resumable one stopped part-way) finishes
    /// it with the originals: the squash would redo its committed batches.
    @Test func aStoreWithAReplacedMigrationInProgressRunsTheOriginals() throws {
        func release(_ appVersion: Version, failingAfter failing: Int?) throws -> MigrationCoordinator {
            let coordinator = MigrationCoordinator(appVersion: appVersion)
            let manager = try coordinator.manager("library", store: library)
            manager.register("1.0") { $0.append("1.0") }
            manager.registerResumable("1.1", batchSize: .fixed(1)) { content, batch in
                let done = Int(batch.cursor ?? "0")!
                if done == failing { throw TestFailure(message: "stopped") }
                content.append("1.1 batch \(done)")
                return done == 1 ? .finished(processed: 1) : .more(cursor: String(done + 1), processed: 1)
            }
            if appVersion >= "1.2" {
                manager.register("1.2") { $0.append("1.2") }
                manager.squash(from: "1.1", through: "1.2") { $0.append("squash") }
            }
            return coordinator
        }
        #expect(try !runReport(of: release("1.1", failingAfter: 1)).succeeded)
        #expect(library.contents == ["1.0", "1.1 batch 0"])
        let coordinator = try release("1.2", failingAfter: nil)
        #expect(try coordinator.plan().steps.map(\.id) == [stepID("library", "1.1"), stepID("library", "1.2")])
        #expect(try coordinator.run().succeeded)
        #expect(library.contents == ["1.0", "1.1 batch 0", "1.1 batch 1", "1.2"])
    }

    @Test func aDependencyOfAReplacedMigrationMakesTheSquashWait() throws {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        coordinator.maxConcurrentStores = 1
        let library = try coordinator.manager("library", store: library)
        let prefs = try coordinator.manager("prefs", store: prefs)
        let log = log
        library.register("1.0") { _ in log.append("library@1.0") }
        library.register("1.1", dependsOn: [prefs.migration("1.0")]) { _ in log.append("library@1.1") }
        library.squash(from: "1.0", through: "1.1") { _ in log.append("library:squash@1.1") }
        prefs.register("1.0") { _ in log.append("prefs@1.0") }
        let plan = try coordinator.plan()
        #expect(plan.steps.map(\.id) == [stepID("prefs", "1.0"), Self.squashID.withVersion("1.1")])
        #expect(plan.steps[1].dependencies == [stepID("prefs", "1.0")])
        #expect(try coordinator.run().succeeded)
        #expect(log.all == ["prefs@1.0", "library:squash@1.1"])
    }

    /// A squash replacing a post-deploy migration is held as that migration would be: a
    /// start-up leaves it (and what waits for it) to the post-deploy run.
    @Test func aSquashReplacingAPostDeployMigrationIsHeldLikeIt() throws {
        let coordinator = MigrationCoordinator(appVersion: "1.1")
        let manager = try coordinator.manager("library", store: library)
        manager.register("1.0") { $0.append("1.0") }
        manager.register("1.0-1", options: .postDeploy) { $0.append("1.0-1") }
        manager.register("1.1") { $0.append("1.1") }
        manager.squash(from: "1.0", through: "1.0-1") { $0.append("squash") }
        let plan = try coordinator.plan()
        #expect(plan.steps.isEmpty)
        #expect(plan.postDeploySteps.map(\.id) == [Self.squashID.withVersion("1.0-1"), stepID("library", "1.1")])
        #expect(try coordinator.run(postDeploy: true).succeeded)
        #expect(library.contents == ["squash", "1.1"])
    }

    // MARK: Removing the originals

    @Test func withTheOriginalsRemovedAFreshStoreRunsTheSquashAsTheRangesLastVersion() throws {
        let coordinator = try release("2.0", originals: false)
        let plan = try coordinator.plan()
        #expect(plan.steps.map(\.id) == [Self.squashID, stepID("library", "2.0"), stepID("prefs", "2.0")])
        #expect(plan.steps[2].dependencies == [Self.squashID])
        #expect(try coordinator.run().succeeded)
        #expect(log.all == ["library:squash@1.2", "library@2.0", "prefs@2.0"])
        let record = try libraryRecord()
        #expect(record.appliedVersions == ["1.2", "2.0"])
        #expect(record.applied.first?.name == "up to 1.2")
    }

    @Test func withTheOriginalsRemovedAStoreThatTookTheSquashOrPassedTheRangeIsUpToDate() throws {
        #expect(try release("1.2").run().succeeded)
        let coordinator = try release("2.0", originals: false)
        #expect(try coordinator.plan().steps.map(\.id) == [stepID("library", "2.0"), stepID("prefs", "2.0")])
        #expect(try coordinator.plan().managers[0].changedFingerprints.isEmpty)
    }

    @Test func withTheOriginalsRemovedAStorePartWayIsRefusedAndLeftUnchanged() throws {
        #expect(try release("1.0", squash: false).run().succeeded)
        let before = try libraryRecord()
        let coordinator = try release("2.0", originals: false)
        let refusal = MigrationError.squashedRangePartWay(
            manager: "library", store: "library store", squash: "1.2", applied: ["1.0"], originalsRegistered: false)
        #expect(throws: refusal) { try coordinator.plan() }
        #expect(throws: refusal) { try coordinator.run() }
        #expect(try libraryRecord() == before)
        #expect(library.contents == ["library@1.0"])
        #expect(prefs.contents.isEmpty)
        #expect("\(refusal)".contains("library store") && "\(refusal)".contains("library@1.2")
            && "\(refusal)".contains("Run the previous release"))
    }

    // MARK: Under the store's lock

    /// Another process runs an original after this run planned the squash: under the lock the
    /// squash sees the range part-way and refuses, leaving that work alone.
    @Test func aSquashRefusesARangeAnotherProcessStartedAfterThePlan() throws {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        coordinator.maxConcurrentStores = 1
        let manager = try coordinator.manager("library", store: library)
        let other = try coordinator.manager("other", store: prefs)
        let library = library
        other.register("1.0") { _ in
            // The previous release, with the originals only, launched meanwhile.
            let previous = MigrationCoordinator(appVersion: "1.0")
            let old = try previous.manager("library", store: library)
            old.register("1.0") { $0.append("library@1.0") }
            try previous.run()
        }
        manager.register("1.0") { $0.append("library@1.0 again") }
        manager.register("1.1") { $0.append("library@1.1") }
        manager.squash(from: "1.0", through: "1.1", dependsOn: [other.migration("1.0")]) { $0.append("squash") }
        #expect(try coordinator.plan().steps.map(\.id) == [stepID("other", "1.0"), Self.squashID.withVersion("1.1")])
        let report = try runReport(of: coordinator)
        let refusal = MigrationError.squashedRangePartWay(
            manager: "library", store: "library store", squash: "1.1", applied: ["1.0"], originalsRegistered: true)
        #expect(report.steps.map(\.outcome) == [.applied, .failed(message: "\(refusal)")])
        #expect(library.contents == ["library@1.0"])
        #expect(try coordinator.run().succeeded)
        #expect(library.contents == ["library@1.0", "library@1.1"])
    }

    // MARK: Bad ranges

    func refusal(_ register: (MigrationManager<InMemoryStore<[String]>>) -> Void) throws -> (any Error)? {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let manager = try coordinator.manager("library", store: library)
        for version in ["1.0", "1.1", "1.2", "1.3"] as [Version] { manager.register(version) { $0.append("\(version)") } }
        register(manager)
        do {
            _ = try coordinator.run()
            return nil
        } catch {
            #expect(library.contents.isEmpty)
            return error
        }
    }

    /// A squash's options by kind reach its store's transaction, as a migration's do, whether
    /// the squash runs as a squash or stands in for originals that are gone.
    @Test(arguments: [true, false])
    func aSquashsOptionsReachItsStoresTransaction(originals: Bool) throws {
        let store = OptionsNotingStore()
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let manager = try coordinator.manager("m", store: store)
        if originals {
            manager.register("1.0", options: MigrationOptions(Compression.self, false)) { $0.append("1.0") }
            manager.register("1.1") { $0.append("1.1") }
        }
        manager.squash(from: "1.0", through: "1.1", options: MigrationOptions(Compression.self, true).named("both")) {
            $0.append("squash")
        }
        manager.register("2.0") { $0.append("2.0") }
        #expect(try coordinator.run().succeeded)
        #expect(store.inner.contents == ["squash", "2.0"])
        #expect(store.compression.value == [true, nil])
    }

    @Test func badRangesAreTypedErrorsBeforeAnythingRuns() throws {
        #expect(try refusal { $0.squash(from: "1.2", through: "1.0") { _ in } } as? MigrationError
            == .squashRangeEmpty(manager: "library", store: "library store", from: "1.2", through: "1.0"))
        #expect(try refusal { $0.squash(from: "1.0", through: "1.1") { _ in }; $0.squash(from: "1.1", through: "1.3") { _ in } }
            as? MigrationError == .squashesOverlap(manager: "library", store: "library store", squash: "1.3", other: "1.1"))
        #expect(try refusal { $0.squash(from: "0.9", through: "1.1") { _ in } } as? MigrationError
            == .squashBoundNotRegistered(manager: "library", store: "library store", squash: "1.1", bound: "0.9"))
        #expect(try refusal { $0.squash(from: "1.0", through: "1.1-1") { _ in } } as? MigrationError
            == .squashBoundNotRegistered(manager: "library", store: "library store", squash: "1.1-1", bound: "1.1-1"))
        #expect(try refusal { $0.squash(from: "1.0", through: "1.1", options: .postDeploy) { _ in } } as? MigrationError
            == .squashIsPostDeploy(manager: "library", store: "library store", squash: "1.1"))
        #expect(try refusal { $0.squash(from: "1.0", through: "1.3") { _ in } } == nil)
    }

    /// A squash after a deferred migration waits with it, and the plan lists every migration it
    /// records as deferred (the reference model found them missing: the list took only steps
    /// that run one migration).
    @Test func aSquashBehindADeferredMigrationIsListedDeferredWithEveryMigrationItRecords() throws {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let library = try coordinator.manager("library", store: self.library)
        library.registerResumable("0.9", deferred: true) { _, _ in .finished(processed: 0) }
        for version in ["1.0", "1.1"] as [Version] { library.register(version) { $0.append("library@\(version)") } }
        library.squash(from: "1.0", through: "1.1") { $0.append("library 1.0-1.1") }
        let plan = try coordinator.plan()
        #expect(plan.managers[0].pending == ["0.9", "1.0", "1.1"])
        #expect(plan.managers[0].deferred == ["0.9", "1.0", "1.1"])
    }
}

extension PlannedStep.ID {
    fileprivate func withVersion(_ version: Version) -> PlannedStep.ID {
        PlannedStep.ID(manager: manager, action: action, version: version)
    }
}

private enum Compression: MigrationOption { typealias Value = Bool }

/// A store that notes the ``Compression`` option of each step's transaction.
private final class OptionsNotingStore: MigrationStore {
    let inner = InMemoryStore<[String]>([])
    let compression = Locked<[Bool?]>([])
    var description: String { "options noting" }

    func readRecords() throws -> [String: MigrationRecord] { try inner.readRecords() }

    func transaction<T>(
        _ request: TransactionRequest, _ body: (inout [String: MigrationRecord], inout [String]) throws -> T
    ) throws -> T {
        compression.value.append(request.options[Compression.self])
        return try inner.transaction(body)
    }
}
