import Dispatch
import Foundation

/// Runs the migrations of several stores at app start: builds one dependency graph from its
/// managers, validates it, plans the pending work, and runs it on Dispatch, one step per store at
/// a time and independent stores in parallel.
///
/// ```swift
/// let coordinator = MigrationCoordinator(appVersion: "2.0")
/// let prefs = try coordinator.manager("preferences", store: PreferencesStore(url: prefsURL))
/// let library = try coordinator.manager("library", store: SQLiteStore(url: dbURL))
///
/// prefs.register("1.1") { defaults in try defaults.renameKey("showHelp", to: "onboarding.showHelp") }
/// library.register("1.1") { db in try db.addColumn("guid", type: .text, to: "event") }
/// library.register("2.0", dependsOn: [prefs.migration("1.1")]) { db in … }
///
/// let plan = try coordinator.plan()     // nothing runs
/// let report = try coordinator.run()    // or `try await coordinator.run()`
/// ```
///
/// A coordinator is configured once, at launch, then planned and run; configuring it while a run
/// is in progress affects only later runs.
public final class MigrationCoordinator: @unchecked Sendable {
    // @unchecked: the mutable configuration below is only touched with `lock` held.
    /// The version of the app, which migrations never go past.
    public let appVersion: Version

    // Guards the properties below; managers guard their own registrations.
    private let lock = NSLock()
    private var managers: [any MigrationManagerDefining] = []
    /// `nil` until set: the processor count is read when a run needs it, since reading it (cgroup
    /// quotas on Linux) costs more than a launch with nothing to do.
    private var maxConcurrent: Int?
    private var onFailure: FailurePolicy = .continueIndependentWork
    private var eventObserver: (@Sendable (MigrationEvent) -> Void)?

    /// Creates a coordinator for the app at `appVersion`, such as `"2.0"` or a build number.
    public init(appVersion: Version) {
        self.appVersion = appVersion
    }

    /// Creates a coordinator for the app version in `bundle`'s `CFBundleShortVersionString`.
    ///
    /// - Throws: ``VersionError`` when the bundle has no such key or its value is not a version.
    public convenience init(bundle: Bundle) throws {
        let text = bundle.object(forInfoDictionaryKey: "CFBundleShortVersionString") as? String
        self.init(appVersion: try Version(parsing: text ?? ""))
    }

    /// At most how many stores migrate at once. Defaults to the number of active processors.
    public var maxConcurrentStores: Int {
        get { lock.withLock { maxConcurrent } ?? ProcessInfo.processInfo.activeProcessorCount }
        set { lock.withLock { maxConcurrent = max(1, newValue) } }
    }

    /// What happens to the rest of the run when a step fails. Defaults to
    /// ``FailurePolicy/continueIndependentWork``.
    public var failurePolicy: FailurePolicy {
        get { lock.withLock { onFailure } }
        set { lock.withLock { onFailure = newValue } }
    }

    /// Told of each ``MigrationEvent`` of a run, on the scheduler's threads.
    public var observer: (@Sendable (MigrationEvent) -> Void)? {
        get { lock.withLock { eventObserver } }
        set { lock.withLock { eventObserver = newValue } }
    }

    /// Creates the manager called `name` for `store`.
    ///
    /// Several managers may share one store: their records are kept apart by name, and the
    /// scheduler never runs two migrations on one store at once. Two store objects for the same
    /// storage (one file, say) have the same ``MigrationStore/identity`` and are scheduled as one
    /// store; sharing one object also shares its connection.
    ///
    /// - Throws: ``MigrationError/duplicateManager(name:)`` when a manager has that name already.
    public func manager<Store: MigrationStore>(_ name: String, store: Store) throws -> MigrationManager<Store> {
        try lock.withLock {
            guard !managers.contains(where: { $0.name == name }) else { throw MigrationError.duplicateManager(name: name) }
            let manager = MigrationManager(name: name, store: store)
            managers.append(manager)
            return manager
        }
    }

    /// Creates the manager called `name` for a store whose type is chosen at run time, wrapped in
    /// an ``AnyMigrationStore``; its bodies edit the store's `Content` as they would on the store
    /// itself.
    ///
    /// ```swift
    /// let store: any MigrationStore<Preferences> = inAppGroup ? UserDefaultsStore(suiteName: group) : PreferencesStore(url: url)
    /// let settings = try coordinator.manager("settings", store: store)
    /// ```
    ///
    /// - Throws: ``MigrationError/duplicateManager(name:)`` when a manager has that name already.
    public func manager<Content>(
        _ name: String, store: any MigrationStore<Content>
    ) throws -> MigrationManager<AnyMigrationStore<Content>> {
        try manager(name, store: AnyMigrationStore(store))
    }

    /// Computes the pending work without running anything: validates the graph, reads every
    /// manager's record and applies the first-launch, late-migration and newer-store policies.
    ///
    /// Reads only: no store is created, converted or locked. A store newer than the app, or late
    /// migrations under a `.fail` policy, are reported by the plan (``MigrationPlan/blockingErrors``)
    /// rather than thrown; `run()` refuses them.
    ///
    /// - Parameter targets: Plans only these migrations and the steps they depend on (GRDB's
    ///   `migrate(upTo:)`, Django's targets); `nil` plans everything. App-version hooks run only
    ///   in untargeted runs.
    /// - Throws: ``MigrationError`` for an invalid graph or target, or an unreadable record.
    public func plan(targets: [MigrationReference]? = nil) throws -> MigrationPlan {
        try executablePlan(targets: targets).executable.plan
    }

    /// Runs the pending work and waits for it to finish.
    ///
    /// Call it at launch before the stores are used, but not on a queue a migration body waits
    /// for. Cancel it through its `Progress`, which joins `Progress.current()` when there is one.
    ///
    /// Unavailable from asynchronous code, where blocking would hold a thread of the cooperative
    /// pool: there `try await run()` is the one to call. Swift's overload resolution treats
    /// top-level code (`main.swift`) as synchronous even after an `await`, and would pick this
    /// blocking overload for `try await coordinator.run()`; the compiler refuses that instead, so
    /// call the asynchronous one from an `async` function there:
    ///
    /// ```swift
    /// // main.swift
    /// func migrate() async throws { try await coordinator.run() }
    /// try await migrate()
    /// ```
    ///
    /// - Returns: The report, when every step applied.
    /// - Throws: ``MigrationError`` before anything runs for an invalid graph or store;
    ///   ``MigrationRunError``, with the report, when a step failed or the run was cancelled.
    @available(*, noasync, message: "it blocks its thread until the run ends; call 'try await run()' from an async function")
    @discardableResult
    public func run(targets: [MigrationReference]? = nil) throws -> MigrationReport {
        let finished = DispatchSemaphore(value: 0)
        let outcome = ResultBox()
        start(targets: targets) { result in
            outcome.result = result
            finished.signal()
        }
        finished.wait()
        return try outcome.result!.get()
    }

    /// Runs the pending work; cancelling the task cancels the run (steps already running finish
    /// or roll back, nothing new starts).
    ///
    /// - Returns: The report, when every step applied.
    /// - Throws: ``MigrationError`` before anything runs; ``MigrationRunError`` when a step failed
    ///   or the run was cancelled.
    @discardableResult
    public func run(targets: [MigrationReference]? = nil) async throws -> MigrationReport {
        let handle = MigrationRunHandle()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // Planning reads every store: off the cooperative thread pool, like the steps.
                startInBackground(targets: targets, handle: handle) { result in continuation.resume(with: result) }
            }
        } onCancel: {
            handle.cancel()
        }
    }

    /// Runs the pending work in the background and calls `completion` on `queue` when it is done:
    /// the main queue unless told otherwise, as an app's launch screen wants.
    ///
    /// A command-line tool or a server whose main thread does not run a run loop or
    /// `dispatchMain()` never drains the main queue: pass a queue of your own there.
    ///
    /// ```swift
    /// let handle = coordinator.run(queue: .main) { result in
    ///     switch result {
    ///     case .success(let report): showApp(report)
    ///     case .failure(let error): showRecovery(error)
    ///     }
    /// }
    /// progressView.observedProgress = handle.progress
    /// ```
    @discardableResult
    public func run(
        targets: [MigrationReference]? = nil, queue: DispatchQueue = .main,
        completion: @escaping @Sendable (Result<MigrationReport, any Error>) -> Void
    ) -> MigrationRunHandle {
        let handle = MigrationRunHandle()
        startInBackground(targets: targets, handle: handle) { result in queue.async { completion(result) } }
        return handle
    }

    private func startInBackground(
        targets: [MigrationReference]?, handle: MigrationRunHandle,
        completion: @escaping @Sendable (Result<MigrationReport, any Error>) -> Void
    ) {
        DispatchQueue(label: "StoreMigrations.MigrationCoordinator.run", qos: .userInitiated).async {
            self.start(targets: targets, handle: handle, completion: completion)
        }
    }

    /// Plans and starts a run; `completion` is called once, on any thread. The run is attached to
    /// `handle` before its first step starts, so that a cancellation is never applied late.
    private func start(
        targets: [MigrationReference]?, handle: MigrationRunHandle? = nil,
        completion: @escaping @Sendable (Result<MigrationReport, any Error>) -> Void
    ) {
        let startedAt = Date()
        let clockStart = ContinuousClock.now
        let progress = Progress(totalUnitCount: 0)
        let planned: (executable: ExecutablePlan, managers: [ManagerDefinition])
        let (maxConcurrent, failurePolicy, observer) = lock.withLock { (self.maxConcurrent, onFailure, eventObserver) }
        do {
            planned = try executablePlan(targets: targets)
            if let refusal = planned.executable.plan.blockingErrors.first { throw refusal }
        } catch {
            // The run's progress may already be a child of the caller's: finish it.
            progress.totalUnitCount = 1
            progress.completedUnitCount = 1
            handle?.attach(nil)
            completion(.failure(error))
            return
        }
        let run = MigrationRun(
            executable: planned.executable, managers: planned.managers, observer: observer,
            startedAt: startedAt, clockStart: clockStart,
            planningDuration: (ContinuousClock.now - clockStart).seconds, progress: progress)
        progress.cancellationHandler = { [weak run] in run?.cancel() }
        handle?.attach(run)
        run.start(maxConcurrentStores: maxConcurrent, failurePolicy: failurePolicy) { report in
            completion(report.succeeded ? .success(report) : .failure(MigrationRunError(report: report)))
        }
    }

    /// Freezes the managers, validates their graph, reads each store's records once (managers on
    /// stores of one identity share the read), asks first-launch policies, and plans.
    private func executablePlan(targets: [MigrationReference]?) throws -> (executable: ExecutablePlan, managers: [ManagerDefinition]) {
        let definitions = lock.withLock { managers }.map { $0.definition() }
        let graph = try MigrationGraph(managers: definitions.map(\.graphManager), appVersion: appVersion)
        var storeIndex: [StoreIdentity: Int] = [:]
        var recordsByStore: [[String: MigrationRecord]] = []
        var inputs: [PlanningInput] = []
        inputs.reserveCapacity(definitions.count)
        for definition in definitions {
            let index: Int
            if let known = storeIndex[definition.identity] {
                index = known
            } else {
                index = recordsByStore.count
                storeIndex[definition.identity] = index
                recordsByStore.append(try definition.readRecords())
            }
            let record = recordsByStore[index][definition.name] ?? MigrationRecord()
            inputs.append(PlanningInput(
                store: definition.storeDescription, storeIndex: index, isRebuildable: definition.isRebuildable,
                record: record, newerStorePolicy: definition.newerStorePolicy, latePolicy: definition.latePolicy,
                firstLaunch: record.level == nil ? try definition.decideFirstLaunch() : nil,
                hasHook: definition.hasHook))
        }
        return (try MigrationPlanner.plan(graph, inputs: inputs, targets: targets), definitions)
    }

    private final class ResultBox: @unchecked Sendable {
        // @unchecked: written once before the semaphore is signalled, read after the wait.
        var result: Result<MigrationReport, any Error>?
    }
}

/// A run started by ``MigrationCoordinator/run(targets:queue:completion:)``: its progress, and a way to
/// cancel it.
public final class MigrationRunHandle: @unchecked Sendable {
    // @unchecked: `run` and `cancelRequested` are only touched with `lock` held.
    private let lock = NSLock()
    private var run: MigrationRun?
    private var cancelRequested = false

    /// The run's progress: one unit per step, each step a child that its body can advance.
    /// Cancelling it cancels the run.
    public let progress = Progress(totalUnitCount: 1)

    init() {}

    /// Starts nothing new; steps already running finish or roll back, the others are reported as
    /// cancelled.
    public func cancel() {
        let run = lock.withLock { () -> MigrationRun? in
            cancelRequested = true
            return self.run
        }
        run?.cancel()
    }

    func attach(_ run: MigrationRun?) {
        guard let run else {
            progress.completedUnitCount = progress.totalUnitCount
            return
        }
        progress.addChild(run.progress, withPendingUnitCount: 1)
        let cancel = lock.withLock { () -> Bool in
            self.run = run
            return cancelRequested
        }
        if cancel { run.cancel() }
    }
}

/// What the coordinator needs of a manager, whatever its store type.
protocol MigrationManagerDefining: AnyObject, Sendable {
    var name: String { get }
    func definition() -> ManagerDefinition
}

extension MigrationManager: MigrationManagerDefining {}
