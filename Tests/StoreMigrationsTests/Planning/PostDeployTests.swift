import Foundation
import Testing
import StoreMigrations
import TestSupport

/// Post-deploy migrations: left pending by start-up runs with everything that depends on them
/// (the manager's later migrations, other managers' dependents), listed apart by the plan (text,
/// JSON, DOT), and run by `run(postDeploy: true)`.
@Suite struct PostDeployTests {
    let coordinator = MigrationCoordinator(appVersion: "2.0")
    let log = EventLog()
    let hooks = EventLog()
    let a: MigrationManager<InMemoryStore<[String]>>
    let b: MigrationManager<InMemoryStore<[String]>>

    /// a: 1.0, 2.0, 2.0-1 (post-deploy), 2.0-2, with a hook; b: 1.0, 2.0 after a@2.0-1. One store
    /// at a time, so that steps run in plan order.
    init() throws {
        coordinator.maxConcurrentStores = 1
        a = try coordinator.manager("a", store: InMemoryStore<[String]>([], name: "store a"))
        b = try coordinator.manager("b", store: InMemoryStore<[String]>([], name: "store b"))
        registerLogging(["1.0", "2.0"], on: a, log: log)
        let log = log
        a.register("2.0-1", options: .postDeploy) { applied in
            applied.append("a@2.0-1")
            log.append("a@2.0-1")
        }
        registerLogging(["2.0-2"], on: a, log: log)
        registerLogging(["1.0", "2.0"], on: b, log: log, dependsOn: ["2.0": [a.migration("2.0-1")]])
        let hooks = hooks
        a.onAppVersionChange { _, current in hooks.append("a:hook@\(current)") }
    }

    /// Issue 26, defect 2: release 2.0 has an ordinary 2.0 and a post-deploy 2.0-1; release 3.0
    /// adds 3.0 and starts before the post-deploy run. Its start-up never reports up to date: it
    /// refuses before any step, naming 3.0 and 2.0-1; the post-deploy run then runs both.
    @Test func theNextReleasesStartUpRefusesWhileThePreviousPostDeployStepWaits() throws {
        let store = InMemoryStore<[String]>([], name: "orders store")
        func release(_ appVersion: Version) throws -> MigrationCoordinator {
            let coordinator = MigrationCoordinator(appVersion: appVersion)
            let orders = try coordinator.manager("orders", store: store)
            orders.register("2.0") { $0.append("2.0") }
            orders.register("2.0-1", options: .postDeploy) { $0.append("2.0-1") }
            if appVersion >= "3.0" { orders.register("3.0") { $0.append("3.0") } }
            return coordinator
        }
        #expect(try release("2.0").run().succeeded)
        #expect(store.contents == ["2.0"])

        let next = try release("3.0")
        let plan = try next.plan()
        #expect(!plan.isUpToDate)
        #expect(plan.managers[0].heldBehindPostDeploy == ["3.0"])
        let refusal = MigrationError.heldBehindPostDeploy(
            manager: "orders", store: "orders store", migrations: ["3.0"],
            postDeploy: [MigrationReference(manager: "orders", version: "2.0-1")])
        #expect(plan.blockingErrors == [refusal])
        #expect(throws: refusal) { try next.run() }
        #expect(store.contents == ["2.0"])
        #expect("\(refusal)".contains("orders@3.0") && "\(refusal)".contains("orders@2.0-1") && "\(refusal)".contains("--post-deploy"))

        #expect(try next.plan(postDeploy: true).managers[0].heldBehindPostDeploy.isEmpty)
        #expect(try next.run(postDeploy: true).succeeded)
        #expect(store.contents == ["2.0", "2.0-1", "3.0"])
        #expect(try next.plan().isUpToDate)
    }

    @Test func startUpRunsLeaveThemAndTheirDependentsAndThePostDeployRunRunsThem() throws {
        let plan = try coordinator.plan()
        #expect(plan.steps.map(\.id.description) == ["a@1.0", "b@1.0", "a@2.0", "a:appVersionChange@2.0"])
        #expect(plan.postDeploySteps.map(\.id.description) == ["a@2.0-1", "a@2.0-2", "b@2.0"])
        #expect(plan.managers.map(\.pending) == [["1.0", "2.0"], ["1.0"]])
        #expect(plan.managers.map(\.postDeploy) == [["2.0-1", "2.0-2"], ["2.0"]])

        let startUp = try coordinator.run()
        #expect(startUp.steps.map(\.step.id.description) == ["a@1.0", "b@1.0", "a@2.0", "a:appVersionChange@2.0"])
        #expect(log.all == ["a@1.0", "b@1.0", "a@2.0"])
        #expect(hooks.all == ["a:hook@2.0"])
        #expect(a.store.contents == ["a@1.0", "a@2.0"] && b.store.contents == ["b@1.0"])

        // Every other replica's start-up: nothing to do, the post-deploy work still listed.
        let again = try coordinator.plan()
        #expect(again.isUpToDate)
        #expect(again.postDeploySteps.map(\.id.description) == ["a@2.0-1", "a@2.0-2", "b@2.0"])
        #expect(try coordinator.run().steps.isEmpty)
        #expect(log.all.count == 3)

        let included = try coordinator.plan(postDeploy: true)
        #expect(included.steps.map(\.id.description) == ["a@2.0-1", "a@2.0-2", "b@2.0"])
        #expect(included.postDeploySteps.isEmpty)
        #expect(included.managers.map(\.postDeploy) == [["2.0-1", "2.0-2"], ["2.0"]])

        let postDeploy = try coordinator.run(postDeploy: true)
        #expect(postDeploy.steps.map(\.step.id.description) == ["a@2.0-1", "a@2.0-2", "b@2.0"])
        #expect(postDeploy.steps.allSatisfy { $0.outcome == .applied })
        #expect(log.all == ["a@1.0", "b@1.0", "a@2.0", "a@2.0-1", "a@2.0-2", "b@2.0"])
        #expect(hooks.all == ["a:hook@2.0"], "the hook ran at start-up, once")
        #expect(try a.level() == "2.0-2" && b.level() == "2.0")
        let done = try coordinator.plan()
        #expect(done.isUpToDate && done.postDeploySteps.isEmpty && done.managers.allSatisfy(\.postDeploy.isEmpty))
    }

    @Test func aPostDeployRunOnAFreshStoreRunsEverythingInOrder() throws {
        let report = try coordinator.run(postDeploy: true)
        #expect(log.all == ["a@1.0", "b@1.0", "a@2.0", "a@2.0-1", "a@2.0-2", "b@2.0"])
        #expect(report.steps.count == 7)
    }

    @Test func theTextJSONAndDOTListThemApart() throws {
        let plan = try coordinator.plan()
        let text = plan.description
        #expect(text.contains("  a (store a): level none, first launch (runAll), pending 1.0, 2.0; post-deploy 2.0-1, 2.0-2"))
        #expect(text.contains("  b (store b): level none, first launch (runAll), pending 1.0; post-deploy 2.0"))
        #expect(text.hasSuffix("  after the deployment (post-deploy): a@2.0-1 after a@2.0; a@2.0-2 after a@2.0-1; b@2.0 after b@1.0, a@2.0-1"))

        let decoded = try JSONDecoder().decode(MigrationPlan.self, from: JSONEncoder().encode(plan))
        #expect(decoded == plan)
        let json = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(plan)) as? [String: Any])
        let held = try #require(json["postDeploySteps"] as? [[String: Any]])
        #expect(held.count == 3)

        let dot = plan.graphviz()
        #expect(dot.contains(#"    "a@2.0-1" [label="a@2.0-1\n(post-deploy)", style=dotted];"#))
        #expect(dot.contains(#"    "b@2.0" [label="b@2.0\n(post-deploy)", style=dotted];"#))
        #expect(dot.contains(#"  "a@2.0-1" -> "b@2.0";"#))
        #expect(dot.contains(#"    "a@2.0";"#))
    }

    @Test func aTargetedStartUpRunLeavesATargetedPostDeployMigration() throws {
        let plan = try coordinator.plan(targets: [b.migration("2.0")])
        #expect(plan.steps.map(\.id.description) == ["a@1.0", "b@1.0", "a@2.0"])
        #expect(plan.postDeploySteps.map(\.id.description) == ["a@2.0-1", "b@2.0"])
        let report = try coordinator.run(targets: [b.migration("2.0")], postDeploy: true)
        #expect(report.steps.map(\.step.id.description) == ["a@1.0", "b@1.0", "a@2.0", "a@2.0-1", "b@2.0"])
        #expect(log.all == ["a@1.0", "b@1.0", "a@2.0", "a@2.0-1", "b@2.0"])
    }

    @Test func aResumablePostDeployMigrationInProgressStaysListedWithItsProgress() throws {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        coordinator.deferredWork = .manual
        let big = try coordinator.manager("big", store: InMemoryStore<[String]>([], name: "big store"))
        big.register("1.0") { _ in }
        big.registerResumable("2.0", batchSize: .fixed(10), options: .postDeploy) { rows, batch in
            let done = Int(batch.cursor ?? "0")! + batch.limit
            rows.append("batch to \(done)")
            return done >= 40 ? .finished(processed: batch.limit) : .more(cursor: String(done), processed: batch.limit, total: 40)
        }
        _ = try coordinator.run(launchBudget: .zero, postDeploy: true)
        #expect(big.store.contents == ["batch to 10"])

        let plan = try coordinator.plan()
        #expect(plan.steps.isEmpty && plan.postDeploySteps.map(\.id.description) == ["big@2.0"])
        #expect(plan.managers[0].postDeploy == ["2.0"])
        #expect(plan.managers[0].inProgress.map(\.done) == [10])
        #expect(try coordinator.run().steps.isEmpty, "a start-up run does not resume it")
        #expect(big.store.contents == ["batch to 10"])

        _ = try coordinator.run(postDeploy: true)
        #expect(big.store.contents == ["batch to 10", "batch to 20", "batch to 30", "batch to 40"])
    }
}
