import Foundation
import StoreMigrations
import StoreMigrationsSQLite
import TestSupport

/// The calls bodies and hooks receive, by manager, from any thread.
final class CallLog: @unchecked Sendable {
    // @unchecked: both properties are only touched with `lock` held.
    private let lock = NSLock()
    private var calls: [[String]]
    private var repeats: [String: Int] = [:]

    init(managers: Int) { calls = Array(repeating: [], count: managers) }

    func append(_ manager: Int, _ call: String) { lock.withLock { calls[manager].append(call) } }

    /// The calls since the last time, by manager.
    func take() -> [[String]] {
        lock.withLock {
            defer { calls = calls.map { _ in [] } }
            return calls
        }
    }

    /// How many times `key` was counted, this one included.
    func count(_ key: String) -> Int {
        lock.withLock {
            repeats[key, default: 0] += 1
            return repeats[key]!
        }
    }
}

/// What a body or hook told to fail throws.
struct InjectedFailure: Error, CustomStringConvertible {
    var description: String { "injected-failure" }
}

/// Thrown by a body that keeps returning its cursor once the run has asked it again and again:
/// a coordinator that does not refuse such a batch would otherwise loop for ever.
struct RunawayBatches: Error, CustomStringConvertible {
    var description: String { "runaway-batches: the coordinator kept asking a batch that did not advance" }
}

/// One store kind as the runner uses it: a store object per manager and launch, how a body
/// counts its work in the store's data, and how to read the counts back.
struct StoreHarness<Store: MigrationStore>: Sendable {
    /// The store of manager `index` for one launch (file stores: a new object on the same file).
    let makeStore: @Sendable (_ index: Int) -> Store
    let bump: @Sendable (inout Store.Content, _ key: String, _ by: Int) throws -> Void
    /// The counters of `keys` in the store's data.
    let counters: @Sendable (Store, _ keys: [String]) throws -> [String: Int]
}

/// Runs a scenario on the real coordinator and reports its outcome in the model's terms.
struct RealRunner<Store: MigrationStore>: Sendable {
    let scenario: ModelScenario
    let harness: StoreHarness<Store>
    /// The fingerprint texts of the scenario, by the stored form of their fingerprint.
    let fingerprintTexts: [String: String]

    init(scenario: ModelScenario, harness: StoreHarness<Store>) {
        self.scenario = scenario
        self.harness = harness
        var texts: [String: String] = [:]
        for (manager, spec) in scenario.managers.enumerated() {
            for migration in spec.migrations {
                for edit in 1...2 {
                    let text = "\(MigrationKey(manager: manager, version: migration.version))#\(edit)"
                    texts[MigrationFingerprint(of: text).rawValue] = text
                }
            }
        }
        fingerprintTexts = texts
    }

    func outcome() throws -> ModelOutcome {
        let log = CallLog(managers: scenario.managers.count)
        var outcome = ModelOutcome()
        for (index, launch) in scenario.launches.enumerated() {
            let stores = scenario.managers.indices.map { harness.makeStore($0) }
            var launchOutcome = try run(launch, index: index, tag: "L\(index)", stores: stores, log: log)
            launchOutcome.calls = log.take()
            launchOutcome.records = try stores.indices.map { manager in
                state(of: try stores[manager].readRecords()["m\(manager)"] ?? MigrationRecord())
            }
            launchOutcome.content = try stores.indices.map { manager in
                let keys = scenario.managers[manager].migrations.map { MigrationKey(manager: manager, version: $0.version).description }
                return try harness.counters(stores[manager], keys)
            }
            outcome.launches.append(launchOutcome)
        }
        return outcome
    }

    /// One launch on `stores`; its interleaved launches run from its `.planned` event.
    func run(_ launch: Launch, index: Int, tag: String, stores: [Store], log: CallLog) throws -> LaunchOutcome {
        let coordinator = MigrationCoordinator(appVersion: launch.appVersion)
        coordinator.deferredWork = .manual
        coordinator.dependentsOfDeferred = launch.dependentsOfDeferred
        let managers = try register(launch, index: index, tag: tag, in: coordinator, stores: stores, log: log)
        for (manager, version) in launch.baselineCalls.sorted(by: { $0.key < $1.key }) {
            try managers[manager].baseline(at: version)
        }
        var outcome: LaunchOutcome
        do {
            outcome = LaunchOutcome(plan: summary(of: try coordinator.plan(postDeploy: launch.runsPostDeploy)), result: .ran(succeeded: true, steps: []))
        } catch {
            return LaunchOutcome(plan: nil, result: .refused([Self.describe(error)]))
        }
        let inner = InterleavedOutcomes()
        if !launch.interleaved.isEmpty {
            let runner = self
            coordinator.observer = { event in
                guard case .planned = event, inner.claim() else { return }
                for (position, other) in launch.interleaved.enumerated() {
                    inner.append(Result { try runner.run(other, index: index, tag: "\(tag)i\(position)", stores: stores, log: log) })
                }
            }
        }
        do {
            let report: MigrationReport
            switch launch.kind {
            case .launch(let zeroBudget):
                report = try coordinator.run(launchBudget: zeroBudget ? .zero : nil, postDeploy: launch.postDeploy)
            case .background:
                report = try coordinator.runDeferred(queue: .global()) { _ in }.wait()
            }
            outcome.result = .ran(succeeded: true, steps: steps(of: report))
        } catch let error as MigrationRunError {
            outcome.result = .ran(succeeded: false, steps: steps(of: error.report))
        } catch {
            outcome.result = .refused([Self.describe(error)])
        }
        outcome.interleaved = try inner.outcomes.map { try $0.get() }
        return outcome
    }

    /// Creates the scenario's managers on `stores` with the migrations `launch` registers.
    func register(
        _ launch: Launch, index: Int, tag: String, in coordinator: MigrationCoordinator, stores: [Store], log: CallLog
    ) throws -> [MigrationManager<Store>] {
        let registered = launch.registrations(of: scenario.managers, index: index)
        let bump = harness.bump
        var managers: [MigrationManager<Store>] = []
        for (position, spec) in scenario.managers.enumerated() {
            let manager = try coordinator.manager("m\(position)", store: stores[position])
            switch spec.firstLaunch {
            case .runAll: manager.firstLaunchPolicy = .runAll
            case .baseline: manager.firstLaunchPolicy = .baseline
            case .adopt(let version): manager.firstLaunchPolicy = .decide { _ in .adopt(at: version) }
            }
            manager.newerStorePolicy = spec.newerStore
            manager.lateMigrationPolicy = spec.late
            manager.fingerprintPolicy = spec.fingerprint
            if spec.hasHook {
                let fails = launch.failingHooks.contains(position)
                manager.onAppVersionChange { previous, current in
                    log.append(position, "\(tag) hook \(previous?.description ?? "none")->\(current)")
                    if fails { throw InjectedFailure() }
                }
            }
            for migration in registered[position] {
                let name = MigrationKey(manager: position, version: migration.version).description
                var options = MigrationOptions()
                if let fingerprint = launch.fingerprint(of: migration, manager: position) { options.fingerprint = fingerprint }
                if migration.postDeploy { options[PostDeployMigration.self] = true }
                let dependencies = migration.dependsOn.map { reference(to: $0, launch: launch, index: index) }
                let key = MigrationKey(manager: position, version: migration.version)
                switch migration.body {
                case .plain:
                    let fails = launch.failures[key] != nil
                    manager.register(migration.version, dependsOn: dependencies, options: options) { content in
                        log.append(position, "\(tag) \(name)")
                        if fails { throw InjectedFailure() }
                        try bump(&content, name, 1)
                    }
                case let .resumable(units, batch, deferred):
                    let failing = launch.failures[key], stuck = launch.stuck[key]
                    manager.registerResumable(
                        migration.version, dependsOn: dependencies, batchSize: .fixed(batch), deferred: deferred, options: options
                    ) { content, request in
                        let start = request.cursor.flatMap { Int($0) } ?? 0
                        log.append(position, "\(tag) \(name) after \(start)")
                        if let failing, start >= failing { throw InjectedFailure() }
                        if let stuck, start >= stuck, let cursor = request.cursor {
                            if log.count("\(tag) \(name)") > 20 { throw RunawayBatches() }
                            return .more(cursor: cursor, processed: 0)
                        }
                        let end = min(start + request.limit, units)
                        try bump(&content, name, end - start)
                        return end == units ? .finished(processed: end - start) : .more(cursor: String(end), processed: end - start)
                    }
                }
            }
            if let (squash, originalsRemoved) = launch.squash(of: spec, index: index).map({ ($0.spec, $0.originalsRemoved) }) {
                let replaced = spec.migrations.filter { squash.range.contains($0.version) }
                let failing = replaced.contains { launch.failures[MigrationKey(manager: position, version: $0.version)] != nil }
                // With its originals registered, their dependencies are the squash's; without
                // them, it declares them itself.
                let dependencies = originalsRemoved
                    ? Array(Set(replaced.flatMap(\.dependsOn))).map { reference(to: $0, launch: launch, index: index) }
                    : []
                let effects = replaced.map { migration -> (String, Int) in
                    let name = MigrationKey(manager: position, version: migration.version).description
                    if case let .resumable(units, _, _) = migration.body { return (name, units) }
                    return (name, 1)
                }
                manager.squash(from: squash.from, through: squash.through, dependsOn: dependencies) { content in
                    log.append(position, "\(tag) m\(position):squash@\(squash.through)")
                    if failing { throw InjectedFailure() }
                    for (name, amount) in effects { try bump(&content, name, amount) }
                }
            }
            managers.append(manager)
        }
        return managers
    }

    /// A dependency as `launch` declares it: on a migration replaced by a squash registered
    /// without its originals, on the squash's version.
    func reference(to dependency: Dependency, launch: Launch, index: Int) -> MigrationReference {
        var version = dependency.version
        if let squash = launch.squash(of: scenario.managers[dependency.manager], index: index),
           squash.originalsRemoved, squash.spec.range.contains(version) {
            version = squash.spec.through
        }
        return MigrationReference(manager: "m\(dependency.manager)", version: version)
    }

    func summary(of plan: MigrationPlan) -> PlanSummary {
        PlanSummary(
            managers: plan.managers.map { manager in
                ManagerPlanSummary(
                    steps: plan.steps.filter { $0.manager == manager.name }.map(\.id.description),
                    pending: manager.pending.map(\.description), late: manager.late.map(\.description),
                    ahead: manager.ahead.map(\.description), inProgress: manager.inProgress.map(\.version.description),
                    changedFingerprints: manager.changedFingerprints.map { "\($0.migration.manager)@\($0.migration.version)" },
                    postDeploy: manager.postDeploy.map(\.description), deferred: manager.deferred.map(\.description),
                    newerStore: manager.newerStore?.rawValue, firstLaunch: manager.firstLaunch?.description)
            },
            isUpToDate: plan.isUpToDate)
    }

    /// Per manager, `step id=outcome` in plan order.
    func steps(of report: MigrationReport) -> [[String]] {
        scenario.managers.indices.map { manager in
            report.steps.filter { $0.step.manager == "m\(manager)" }.map { step in
                let word: String
                switch step.outcome {
                case .applied: word = "applied"
                case .alreadyApplied: word = "alreadyApplied"
                case .failed(let message): word = "failed(\(step.error.map { Self.describe($0).kind } ?? message))"
                case .skipped: word = "skipped"
                case .cancelled: word = "cancelled"
                case .inProgress: word = "inProgress"
                case .deferred: word = "deferred"
                }
                return "\(step.id)=\(word)"
            }
        }
    }

    func state(of record: MigrationRecord) -> RecordState {
        func text(_ fingerprint: MigrationFingerprint?) -> String {
            guard let fingerprint else { return "-" }
            return fingerprintTexts[fingerprint.rawValue] ?? fingerprint.rawValue
        }
        return RecordState(
            level: record.level?.description, baseline: record.baseline?.description, appVersion: record.appVersion?.description,
            applied: record.applied.map { "\($0.version)#\(text($0.fingerprint))" },
            inProgress: record.inProgress.map { progress in
                "\(progress.version)@\(progress.done)#\(text(progress.fingerprint))"
            })
    }

    /// An error by its `MigrationError` case and the manager it names, in the model's words.
    static func describe(_ error: any Error) -> ErrorDescription {
        if "\(error)".contains("injected-failure") { return ErrorDescription(kind: ReferenceModel.ErrorKind.injected) }
        guard let error = error as? MigrationError, let child = Mirror(reflecting: error).children.first, let label = child.label
        else { return ErrorDescription(kind: String(describing: type(of: error))) }
        let kind = label
        // A post-deploy refusal is compared by its case alone: which held migration it names first is not specified.
        if kind == ReferenceModel.ErrorKind.heldBehindPostDeploy { return ErrorDescription(kind: kind) }
        let manager = Mirror(reflecting: child.value).children.first { $0.label == "manager" }?.value as? String
        return ErrorDescription(kind: kind, manager: manager)
    }
}

/// The outcomes of the launches run at a launch's `.planned` event.
private final class InterleavedOutcomes: @unchecked Sendable {
    // @unchecked: both properties are only touched with `lock` held.
    private let lock = NSLock()
    private var claimed = false
    private var results: [Result<LaunchOutcome, any Error>] = []

    /// Whether this is the first call: the interleaved launches run once.
    func claim() -> Bool {
        lock.withLock {
            defer { claimed = true }
            return !claimed
        }
    }

    func append(_ result: Result<LaunchOutcome, any Error>) { lock.withLock { results.append(result) } }

    var outcomes: [Result<LaunchOutcome, any Error>] { lock.withLock { results } }
}
