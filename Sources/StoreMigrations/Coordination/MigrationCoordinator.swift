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
    private var deferredWorkPolicy: DeferredWork = .background(qos: .utility)
    private var dependentsPolicy: DependentsOfDeferredPolicy = .wait
    private var background: MigrationRunHandle?
    private var development: DevelopmentMode = .off
    private var resources: WorkerResources?

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

    /// Where the work a launch leaves (deferred migrations, and resumable ones its budget
    /// stopped) goes on. Defaults to a background queue at utility quality of service, started as
    /// `run()` returns.
    public var deferredWork: DeferredWork {
        get { lock.withLock { deferredWorkPolicy } }
        set { lock.withLock { deferredWorkPolicy = newValue } }
    }

    /// What happens to a migration that is not deferred but depends on a deferred one. Defaults
    /// to ``DependentsOfDeferredPolicy/wait``.
    public var dependentsOfDeferred: DependentsOfDeferredPolicy {
        get { lock.withLock { dependentsPolicy } }
        set { lock.withLock { dependentsPolicy = newValue } }
    }

    /// What a run does with a store on which a migration that already ran was edited: erase it
    /// and replay every migration, in debug builds (``DevelopmentMode/eraseOnFingerprintChange``).
    /// Defaults to ``DevelopmentMode/off``.
    ///
    /// ```swift
    /// #if DEBUG
    /// coordinator.developmentMode = .eraseOnFingerprintChange
    /// #endif
    /// ```
    public var developmentMode: DevelopmentMode {
        get { lock.withLock { development } }
        set { lock.withLock { development = newValue } }
    }

    /// What the thread planning this coordinator keeps between the tenants of a fleet, handed to
    /// the stores that read their records with it (``ReadReusingStore``); `nil` outside a fleet.
    package var workerResources: WorkerResources? {
        get { lock.withLock { resources } }
        set { lock.withLock { resources = newValue } }
    }

    /// The background run of the work the last launch left, while it is running or once it ended;
    /// `nil` before one started. Pause it when the app moves to the background, cancel it when a
    /// background task expires: it stops between two batches, and the next launch resumes.
    ///
    /// ```swift
    /// try coordinator.run(launchBudget: .seconds(5))
    /// // later, in applicationDidEnterBackground:
    /// coordinator.backgroundRun?.pause()
    /// ```
    public var backgroundRun: MigrationRunHandle? { lock.withLock { background } }

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
    /// let store: any MigrationStore<Preferences> = inAppGroup
    ///     ? UserDefaultsStore(suiteName: group)
    ///     : PreferencesStore(url: url)
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
    /// - Parameter postDeploy: Whether to plan the post-deploy migrations (``PostDeployMigration``)
    ///   with the rest, as `run(postDeploy: true)` runs them; otherwise the plan lists them apart.
    /// - Throws: ``MigrationError`` for an invalid graph or target, or an unreadable record.
    public func plan(targets: [MigrationReference]? = nil, postDeploy: Bool = false) throws -> MigrationPlan {
        try executablePlan(targets: targets, postDeploy: postDeploy).executable.plan
    }

    /// Runs the pending work, blocking the calling thread until the run ends.
    ///
    /// The calling thread runs the first store's steps itself, at its own quality of service,
    /// while the coordinator's queue runs the stores independent of it in parallel. Call it at
    /// launch before the stores are used, but not on a queue a migration body waits for. Cancel it
    /// through its `Progress`, which joins `Progress.current()` when there is one.
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
    /// - Parameters:
    ///   - targets: Runs only these migrations and the steps they depend on; `nil` runs everything.
    ///   - launchBudget: How long the launch may take before resumable migrations stop after
    ///     their current batch and go on in the background (``deferredWork``); `nil` for no limit.
    ///   - postDeploy: Whether to run the post-deploy migrations (``PostDeployMigration``) too:
    ///     only once the deployment says no process of the previous app version is serving.
    /// - Returns: The report, when every step applied, was deferred, or was left in progress by
    ///   the budget (``MigrationReport/postponed``).
    /// - Throws: ``MigrationError`` before anything runs for an invalid graph or store;
    ///   ``MigrationRunError``, with the report, when a step failed or the run was cancelled.
    @available(*, noasync, message: "it blocks its thread until the run ends; call 'try await run()' from an async function")
    @discardableResult
    public func run(
        targets: [MigrationReference]? = nil, launchBudget: Duration? = nil, postDeploy: Bool = false
    ) throws -> MigrationReport {
        try runAndWait(targets: targets, postDeploy: postDeploy, phase: .launch(budget: launchBudget))
    }

    /// Runs everything pending to its end, deferred migrations included, and waits: a release
    /// step (``/StoreMigrationsCommand/MigrationCommand``'s `migrate`) has no background to leave
    /// work to, since its process ends with it.
    @available(*, noasync, message: "it blocks its thread until the run ends")
    package func runToCompletion(targets: [MigrationReference]?, postDeploy: Bool) throws -> MigrationReport {
        try runAndWait(targets: targets, postDeploy: postDeploy, phase: .background)
    }

    @available(*, noasync, message: "it blocks its thread until the run ends")
    private func runAndWait(targets: [MigrationReference]?, postDeploy: Bool, phase: RunPhase) throws -> MigrationReport {
        let finished = DispatchSemaphore(value: 0)
        let outcome = ResultBox()
        start(targets: targets, postDeploy: postDeploy, phase: phase) { result in
            outcome.result = result
            finished.signal()
        }
        finished.wait()
        return try outcome.result!.get()
    }

    /// The plan with what each manager's store records (by manager, in registration order): what
    /// a status shows beside the pending work.
    package func planAndRecords(postDeploy: Bool) throws -> (plan: MigrationPlan, records: [MigrationRecord]) {
        let executable = try executablePlan(targets: nil, postDeploy: postDeploy).executable
        return (executable.plan, executable.records)
    }

    /// Records `version` as the baseline mark of the manager called `name`, as
    /// ``MigrationManager/baseline(at:)`` does; `nil` when no manager has that name.
    package func baseline(manager name: String, at version: Version) throws -> Bool? {
        guard let manager = lock.withLock({ managers.first { $0.name == name } }) else { return nil }
        return try manager.baseline(at: version)
    }

    /// Accepts the current fingerprints of the manager called `name`, as
    /// ``MigrationManager/repairFingerprints()`` does; `nil` when no manager has that name.
    package func repairFingerprints(manager name: String) throws -> [Version]? {
        guard let manager = lock.withLock({ managers.first { $0.name == name } }) else { return nil }
        return try manager.repairFingerprints()
    }

    /// Runs the pending work from asynchronous code, suspending until the run ends.
    ///
    /// Cancelling the task cancels the run: steps already running finish or roll back, nothing
    /// new starts.
    ///
    /// - Parameters:
    ///   - targets: Runs only these migrations and the steps they depend on; `nil` runs everything.
    ///   - launchBudget: How long the launch may take before resumable migrations stop after
    ///     their current batch and go on in the background; `nil` for no limit.
    ///   - postDeploy: Whether to run the post-deploy migrations too (``PostDeployMigration``).
    /// - Returns: The report, when every step applied.
    /// - Throws: ``MigrationError`` before anything runs; ``MigrationRunError`` when a step failed
    ///   or the run was cancelled.
    @discardableResult
    public func run(
        targets: [MigrationReference]? = nil, launchBudget: Duration? = nil, postDeploy: Bool = false
    ) async throws -> MigrationReport {
        let handle = MigrationRunHandle(recordingEvents: false)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // Planning reads every store: off the cooperative thread pool, like the steps.
                startInBackground(
                    targets: targets, postDeploy: postDeploy, phase: .launch(budget: launchBudget), handle: handle
                ) { result in
                    continuation.resume(with: result)
                }
            }
        } onCancel: {
            handle.cancel()
        }
    }

    /// Starts the pending work in the background and returns its handle at once; `completion`
    /// is called on `queue` when the run ends.
    ///
    /// The queue is the main queue unless told otherwise, as an app's launch screen wants.
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
        targets: [MigrationReference]? = nil, launchBudget: Duration? = nil, postDeploy: Bool = false,
        queue: DispatchQueue = .main, completion: @escaping @Sendable (Result<MigrationReport, any Error>) -> Void
    ) -> MigrationRunHandle {
        let handle = MigrationRunHandle()
        startInBackground(targets: targets, postDeploy: postDeploy, phase: .launch(budget: launchBudget), handle: handle) { result in
            queue.async { completion(result) }
        }
        return handle
    }

    /// Runs the work launches left (deferred migrations, resumable ones a budget stopped) and
    /// everything else pending, in the background, batch by batch; calls `completion` on `queue`
    /// when it is done. With ``DeferredWork/manual``, call it from a background task of your own:
    ///
    /// ```swift
    /// BGTaskScheduler.shared.register(forTaskWithIdentifier: "migrations", using: nil) { task in
    ///     let handle = coordinator.runDeferred(queue: .main) { result in
    ///         task.setTaskCompleted(success: (try? result.get()) != nil)
    ///     }
    ///     task.expirationHandler = { handle.cancel() }   // stops after the current batch
    /// }
    /// ```
    @discardableResult
    public func runDeferred(
        queue: DispatchQueue = .main, completion: @escaping @Sendable (Result<MigrationReport, any Error>) -> Void = { _ in }
    ) -> MigrationRunHandle {
        runInBackground(qos: .utility) { result in queue.async { completion(result) } }
    }

    private func runInBackground(
        qos: DispatchQoS.QoSClass, completion: @escaping @Sendable (Result<MigrationReport, any Error>) -> Void = { _ in }
    ) -> MigrationRunHandle {
        let handle = MigrationRunHandle()
        lock.withLock { background = handle }
        startInBackground(
            targets: nil, postDeploy: false, phase: .background, qos: DispatchQoS(qosClass: qos, relativePriority: 0), handle: handle,
            completion: completion)
        return handle
    }

    /// A run's part of the work, as the coordinator is asked for it.
    enum RunPhase {
        case launch(budget: Duration?)
        case background
    }

    private func startInBackground(
        targets: [MigrationReference]?, postDeploy: Bool, phase: RunPhase, qos: DispatchQoS = .userInitiated, handle: MigrationRunHandle,
        completion: @escaping @Sendable (Result<MigrationReport, any Error>) -> Void
    ) {
        DispatchQueue(label: "StoreMigrations.MigrationCoordinator.run", qos: qos).async {
            self.start(targets: targets, postDeploy: postDeploy, phase: phase, handle: handle, completion: completion)
        }
    }

    /// Plans and starts a run; `completion` is called once, on any thread. The run is attached to
    /// `handle` before its first step starts, so that a cancellation is never applied late.
    private func start(
        targets: [MigrationReference]?, postDeploy: Bool, phase: RunPhase, handle: MigrationRunHandle? = nil,
        completion: @escaping @Sendable (Result<MigrationReport, any Error>) -> Void
    ) {
        let startedAt = Date()
        let clockStart = ContinuousClock.now
        let progress = Progress(totalUnitCount: 0)
        let planned: (executable: ExecutablePlan, managers: [ManagerDefinition], erasure: StoreErasure)
        let (maxConcurrent, failurePolicy, userObserver) = lock.withLock { (self.maxConcurrent, onFailure, eventObserver) }
        let observer: (@Sendable (MigrationEvent) -> Void)?
        if let handle, handle.recordsEvents {
            observer = { event in
                userObserver?(event)
                handle.record(event)
            }
        } else {
            observer = userObserver
        }
        do {
            planned = try executablePlan(targets: targets, postDeploy: postDeploy)
            if let refusal = planned.executable.plan.blockingErrors.first { throw refusal }
            if let refusal = planned.erasure.refusal { throw refusal }
            try planned.erasure.erase()
        } catch {
            // The run's progress may already be a child of the caller's: finish it.
            progress.totalUnitCount = 1
            progress.completedUnitCount = 1
            handle?.attach(nil)
            handle?.finish(.failure(error))
            completion(.failure(error))
            return
        }
        // The steps record their migrations' fingerprints after their bodies: those the plan did
        // not read (a new store's) are computed while the first body runs.
        for (manager, plan) in zip(planned.managers, planned.executable.plan.managers)
        where plan.name == manager.name && !plan.pending.isEmpty {
            manager.labels.fingerprints.computeAside()
        }
        let runPhase: MigrationRun.Phase
        switch phase {
        case .launch(let budget): runPhase = .launch(deadline: budget.map { clockStart + $0 })
        case .background: runPhase = .background
        }
        let run = MigrationRun(
            executable: planned.executable, managers: planned.managers, observer: observer,
            startedAt: startedAt, clockStart: clockStart,
            planningDuration: (ContinuousClock.now - clockStart).seconds, progress: progress, phase: runPhase)
        progress.cancellationHandler = { [weak run] in run?.cancel() }
        handle?.attach(run)
        run.start(maxConcurrentStores: maxConcurrent, failurePolicy: failurePolicy) { [self] report in
            // Started before the launch's caller hears of it, so that `backgroundRun` is set when
            // `run()` returns.
            if case .launch = phase, report.succeeded, !report.postponed.isEmpty,
               case .background(let qos) = deferredWork {
                _ = runInBackground(qos: qos)
            }
            let result: Result<MigrationReport, any Error> = report.succeeded ? .success(report) : .failure(MigrationRunError(report: report))
            handle?.finish(result)
            completion(result)
        }
    }

    /// Freezes the managers, validates their graph, reads each store's records once (managers on
    /// stores of one identity share the read), asks first-launch policies, and plans.
    /// The managers, in registration order.
    func managerList() -> [any MigrationManagerDefining] {
        lock.withLock { managers }
    }

    /// With a ``developmentMode`` that erases, the stores it would erase are planned again as
    /// if erased: no records, every migration pending.
    private func executablePlan(
        targets: [MigrationReference]?, postDeploy: Bool
    ) throws -> (executable: ExecutablePlan, managers: [ManagerDefinition], erasure: StoreErasure) {
        let (registered, dependentsPolicy, mode, resources) = lock.withLock {
            (managers, self.dependentsPolicy, development, self.resources)
        }
        let definitions = registered.map { $0.definition() }
        let graph = try MigrationGraph(managers: definitions.map(\.graphManager), appVersion: appVersion)
        var storeIndex: [StoreIdentity: Int] = [:]
        var recordsByStore: [[String: MigrationRecord]] = []
        // Asked only of stores without records, so that a launch with records pays nothing more.
        var storeIsMissing: [Bool] = []
        var inputs: [PlanningInput] = []
        inputs.reserveCapacity(definitions.count)
        for definition in definitions {
            let index: Int
            if let known = storeIndex[definition.identity] {
                index = known
            } else {
                index = recordsByStore.count
                storeIndex[definition.identity] = index
                let records = try definition.readRecords(resources)
                recordsByStore.append(records)
                storeIsMissing.append(records.isEmpty && !definition.storeExists())
            }
            let record = recordsByStore[index][definition.name] ?? MigrationRecord()
            inputs.append(PlanningInput(
                store: definition.storeDescription, storeIndex: index, storeIsMissing: storeIsMissing[index],
                isRebuildable: definition.isRebuildable,
                record: record, newerStorePolicy: definition.newerStorePolicy, latePolicy: definition.latePolicy,
                names: definition.labels.names, fingerprints: definition.labels.fingerprints,
                fingerprintPolicy: definition.fingerprintPolicy,
                firstLaunch: record.level == nil ? try definition.decideFirstLaunch() : nil,
                hasHook: definition.hasHook, postDeploy: definition.postDeploy, resumable: definition.resumable,
                squashes: definition.squashes))
        }
        var executable = try MigrationPlanner.plan(graph, inputs: inputs, targets: targets, postDeploy: postDeploy)
        var erasure = StoreErasure()
        if mode.erasesStores {
            erasure = StoreErasure(
                plan: executable.plan, storeIndices: inputs.map(\.storeIndex), storesByManager: registered.map(\.migratedStore), mode: mode)
        }
        if !erasure.stores.isEmpty {
            executable = try planErased(erasure, graph: graph, inputs: inputs, targets: targets, postDeploy: postDeploy)
        }
        if definitions.contains(where: { $0.deferred.contains(true) }) {
            Deferral.apply(to: &executable, registered: definitions.map(\.deferred), policy: dependentsPolicy)
        }
        return (executable, definitions, erasure)
    }

    /// Plans again with the stores `erasure` erases as they will be: no records, every migration
    /// pending from the first whatever the first-launch policy, since they held data before.
    private func planErased(
        _ erasure: StoreErasure, graph: MigrationGraph, inputs: [PlanningInput], targets: [MigrationReference]?, postDeploy: Bool
    ) throws -> ExecutablePlan {
        let erased = inputs.map { input in
            guard erasure.stores[input.storeIndex] != nil else { return input }
            return PlanningInput(
                store: input.store, storeIndex: input.storeIndex, storeIsMissing: false, isRebuildable: input.isRebuildable,
                record: MigrationRecord(), newerStorePolicy: input.newerStorePolicy, latePolicy: input.latePolicy,
                names: input.names, fingerprints: input.fingerprints, fingerprintPolicy: input.fingerprintPolicy,
                firstLaunch: .runAll, hasHook: input.hasHook, postDeploy: input.postDeploy, resumable: input.resumable)
        }
        var executable = try MigrationPlanner.plan(graph, inputs: erased, targets: targets, postDeploy: postDeploy)
        for (index, store) in erasure.stores {
            let positions = inputs.indices.filter { inputs[$0].storeIndex == index }
            executable.plan.setDevelopmentErase(store.changes, forManagersAt: positions)
        }
        return executable
    }

    private final class ResultBox: @unchecked Sendable {
        // @unchecked: written once before the semaphore is signalled, read after the wait.
        var result: Result<MigrationReport, any Error>?
    }
}

/// A run started by ``MigrationCoordinator/run(targets:launchBudget:postDeploy:queue:completion:)``: its
/// events, where it stands, its progress, and a way to pause or cancel it.
///
/// Under Swift 6, follow a run through ``events`` and ``snapshot``, which need no state of your
/// own (an observer closure is `@Sendable` and cannot keep any):
///
/// ```swift
/// let handle = coordinator.run { _ in }
/// for await event in handle.events {
///     print(event)             // library@2.0: 45%
///     print(handle.snapshot)   // 3 of 8 steps ended (41%); running library@2.0 (45%)
/// }
/// let report = try await handle.report()   // the stream ends with the run
/// ```
public final class MigrationRunHandle: @unchecked Sendable {
    // @unchecked: `run`, `cancelRequested`, `pauseRequested`, `result` and `state` are only
    // touched with `lock` held; `finished` is signalled once, after `result` is set.
    private let lock = NSLock()
    private var run: MigrationRun?
    private var cancelRequested = false
    private var pauseRequested = false
    private var result: Result<MigrationReport, any Error>?
    private var state = MigrationRunSnapshot()
    private let finished = DispatchSemaphore(value: 0)
    /// Where ``events`` is fed; `nil` for a run whose handle no caller sees, which then makes
    /// no event unless the coordinator has an observer.
    private let eventSink: AsyncStream<MigrationEvent>.Continuation?

    /// The run's progress: one unit per step, each step a child that its body can advance.
    /// Cancelling it cancels the run.
    public let progress = Progress(totalUnitCount: 1)

    /// Every event of the run, in the order the run sends them (the order of one step's events,
    /// and of steps that depend on each other, is theirs), from the first
    /// (``MigrationEvent/planned(_:)``) on, however late the iteration starts: the stream keeps
    /// what was not read yet, until the handle is released. It finishes when the run ends,
    /// whether it succeeded, failed or was cancelled (then ``report()`` says how), and at once
    /// for a run refused before it started. Iterate it once, from one task.
    public let events: AsyncStream<MigrationEvent>

    init(recordingEvents: Bool = true) {
        if recordingEvents {
            let (stream, continuation) = AsyncStream.makeStream(of: MigrationEvent.self, bufferingPolicy: .unbounded)
            events = stream
            eventSink = continuation
        } else {
            events = AsyncStream { $0.finish() }
            eventSink = nil
        }
    }

    /// Where the run stands now: steps ended and how, steps running and how far they have got.
    /// Safe to read from any thread or task, as often as wanted. It is the run's state when read:
    /// read while handling one of ``events``, it may already count later ones.
    public var snapshot: MigrationRunSnapshot { lock.withLock { state } }

    /// Whether the run should make events for the handle.
    var recordsEvents: Bool { eventSink != nil }

    /// Takes `event` into ``snapshot`` and sends it to ``events``, under one lock so that both
    /// see events in one order.
    func record(_ event: MigrationEvent) {
        lock.withLock {
            state.apply(event)
            eventSink?.yield(event)
        }
    }

    /// Starts nothing new; steps already running finish or roll back, the others are reported as
    /// cancelled.
    public func cancel() {
        let run = lock.withLock { () -> MigrationRun? in
            cancelRequested = true
            return self.run
        }
        run?.cancel()
    }

    /// Holds resumable migrations after their current batch, their progress committed, until
    /// ``resume()``; other steps are not held. A cancellation ends the pause: the run stops there.
    public func pause() {
        let run = lock.withLock { () -> MigrationRun? in
            pauseRequested = true
            return self.run
        }
        run?.pauseBetweenBatches()
    }

    /// Lets paused migrations go on.
    public func resume() {
        let run = lock.withLock { () -> MigrationRun? in
            pauseRequested = false
            return self.run
        }
        run?.resume()
    }

    /// How the run ended, once it has; `nil` while it runs.
    public var outcome: Result<MigrationReport, any Error>? { lock.withLock { result } }

    /// Waits for the run to end and returns its report; throws as `run()` does.
    @available(*, noasync, message: "use 'await report()' in asynchronous code")
    @discardableResult
    public func wait() throws -> MigrationReport {
        finished.wait()
        finished.signal()
        return try outcome!.get()
    }

    /// The run's report, once it has ended; throws as `run()` does.
    public func report() async throws -> MigrationReport {
        await withCheckedContinuation { continuation in
            DispatchQueue.global(qos: .utility).async {
                self.finished.wait()
                self.finished.signal()
                continuation.resume()
            }
        }
        return try outcome!.get()
    }

    func attach(_ run: MigrationRun?) {
        guard let run else {
            progress.completedUnitCount = progress.totalUnitCount
            return
        }
        progress.addChild(run.progress, withPendingUnitCount: 1)
        let (cancel, pause) = lock.withLock { () -> (Bool, Bool) in
            self.run = run
            return (cancelRequested, pauseRequested)
        }
        if pause { run.pauseBetweenBatches() }
        if cancel { run.cancel() }
    }

    func finish(_ result: Result<MigrationReport, any Error>) {
        lock.withLock {
            self.result = result
            state.isFinished = true
            // The run's stores (a SQLite store's connection) are let go of with it.
            run = nil
            eventSink?.finish()
        }
        finished.signal()
    }
}

/// What the coordinator needs of a manager, whatever its store type.
protocol MigrationManagerDefining: AnyObject, Sendable {
    var name: String { get }
    func definition() -> ManagerDefinition
    func readStoreRecords(reusing resources: WorkerResources?) throws -> [String: MigrationRecord]
    func baseline(at version: Version) throws -> Bool
    func repairFingerprints() throws -> [Version]
    /// For the testing products (``RegisteredManager``).
    var migratedStore: any MigrationStore { get }
    var registeredVersions: [Version] { get }
}

extension MigrationManager: MigrationManagerDefining {}
