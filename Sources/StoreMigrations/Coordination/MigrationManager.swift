import Foundation

/// A named set of versioned migrations for one store.
///
/// Get one from ``MigrationCoordinator/manager(_:store:)->MigrationManager<Store>``, then register migrations in any
/// order: they run in version order, once each, up to the app version.
///
/// ```swift
/// let prefs = try coordinator.manager("preferences", store: PreferencesStore(url: prefsURL))
/// prefs.register("1.1") { defaults in try defaults.renameKey("showHelp", to: "onboarding.showHelp") }
/// prefs.register("1.1-1") { defaults in defaults.removeValue(for: "legacyFlag") }
/// ```
public final class MigrationManager<Store: MigrationStore>: @unchecked Sendable {
    // @unchecked: registrations and policies are only touched with `lock` held; `name` and
    // `store` are constants.
    /// A body that edits the store's content.
    public typealias Body = @Sendable (inout Store.Content) throws -> Void
    /// A body that also receives its ``MigrationContext`` to report progress or check cancellation.
    public typealias BodyWithContext = @Sendable (inout Store.Content, MigrationContext) throws -> Void
    /// One batch of a resumable migration: processes at most `batch.limit` units after
    /// `batch.cursor` and says where the next batch starts.
    public typealias BatchBody = @Sendable (inout Store.Content, BatchRequest) throws -> BatchResult

    /// Registered migrations, in registration order, as parallel arrays: planning reads the
    /// versions of many thousands of migrations, which a generic element type would slow down.
    ///
    /// Registering is inlinable, so that an app's calls are specialized for its store types:
    /// unspecialized, every append to `bodies` asked the runtime for the generic metadata of
    /// `RegisteredBody` and of its array (hash-table lookups, a large part of an up-to-date
    /// launch).
    @usableFromInline
    struct Registrations {
        @usableFromInline var versions: [Version] = []
        @usableFromInline var dependencies: [[MigrationReference]] = []
        @usableFromInline var bodies: [RegisteredBody] = []
        @usableFromInline var transactions: [TransactionMode] = []
        @usableFromInline var options: [MigrationOptions] = []
        /// The text each migration is fingerprinted by: its options' fingerprint, else its SQL
        /// text. Kept apart, so that a SQL migration's text is neither copied into its options
        /// (an allocation each) nor read back from the bodies, a generic type's array that a
        /// plan would walk unspecialized.
        @usableFromInline var fingerprintTexts: [FingerprintText?] = []
        /// Kept as migrations register, so that freezing a manager with no deferred migration
        /// (nearly every launch) reads no body.
        @usableFromInline var hasDeferred = false
        /// Likewise for resumable migrations: reading every body made a launch's planning slower
        /// (an unspecialized walk of a generic type's array).
        @usableFromInline var hasResumable = false
        /// Squashed migrations, in registration order.
        @usableFromInline var squashes: [RegisteredSquash] = []
        /// Squashes of the whole history, whose range and body are decided when the manager is
        /// frozen (``squashHistory(options:_:)``); usually none.
        @usableFromInline var historySquashes: [RegisteredHistorySquash] = []

        @usableFromInline
        init() {}

        @inlinable
        mutating func append(
            _ version: Version, _ dependencies: [MigrationReference], _ transaction: TransactionMode,
            _ options: MigrationOptions, _ body: RegisteredBody
        ) {
            // Room for a few versions from the first one: growing four arrays one by one from
            // empty took a launch's registrations more copies than appends.
            if versions.isEmpty {
                versions.reserveCapacity(16)
                self.dependencies.reserveCapacity(16)
                bodies.reserveCapacity(16)
                transactions.reserveCapacity(16)
                self.options.reserveCapacity(16)
                fingerprintTexts.reserveCapacity(16)
            }
            versions.append(version)
            self.dependencies.append(dependencies)
            bodies.append(body)
            transactions.append(transaction)
            self.options.append(options)
            fingerprintTexts.append(options.fingerprintText ?? body.fingerprintText.map(FingerprintText.given))
            if case .batched(_, _, let deferred) = body {
                hasResumable = true
                if deferred { hasDeferred = true }
            }
        }
    }

    /// A squashed migration as it was registered.
    @usableFromInline
    struct RegisteredSquash: Sendable {
        let from: Version
        let through: Version
        let dependencies: [MigrationReference]
        let options: MigrationOptions
        let body: BodyWithContext
        /// Why a plan must refuse the squash before anything runs, decided when the manager was
        /// frozen (a history squash whose history it cannot replace).
        var refusal: (any Error)?
    }

    /// A squash of the whole history as it was registered: its body is made from the history
    /// once the manager is frozen.
    @usableFromInline
    struct RegisteredHistorySquash: Sendable {
        let options: MigrationOptions
        let resolve: @Sendable (SquashedHistory) throws -> BodyWithContext
    }

    /// A body as it was registered, so that a plain body is not wrapped in a closure that takes a
    /// context: no allocation per registration.
    @usableFromInline
    enum RegisteredBody: Sendable {
        case plain(Body)
        case withContext(BodyWithContext)
        case batched(BatchBody, size: BatchSize, deferred: Bool)
        /// SQL text and the store's way to run it, kept apart rather than captured by a closure:
        /// an app registers hundreds of SQL migrations, and the text is also what their
        /// fingerprints are computed from unless their options give one.
        case sql(String, execute: @Sendable (Store.Content, String) throws -> Void)

        /// The text the migration is fingerprinted by when its options give none.
        @inlinable
        var fingerprintText: String? {
            if case .sql(let sql, _) = self { return sql }
            return nil
        }

        var isDeferred: Bool {
            if case .batched(_, _, let deferred) = self { return deferred }
            return false
        }

        var isResumable: Bool {
            if case .batched = self { return true }
            return false
        }
    }

    /// The manager's name, under which its level is recorded in the store.
    public let name: String
    /// The store the manager migrates.
    public let store: Store

    // Registration happens on the app's launch thread while plans may be read from others.
    @usableFromInline let lock = NSLock()
    // Only ever accessed with `lock` held, which already excludes overlapping accesses: the
    // runtime's exclusivity check cost each registration more than its lock.
    @exclusivity(unchecked) @usableFromInline var registrations = Registrations()
    private var hooks: [@Sendable (Version?, Version) throws -> Void] = []
    private var firstLaunch: FirstLaunchPolicy<Store> = .runAll
    private var newerStore: NewerStorePolicy = .fail
    private var late: LateMigrationPolicy = .run
    private var fingerprint: FingerprintPolicy = .warn

    init(name: String, store: Store) {
        self.name = name
        self.store = store
    }

    /// What to do when the store has no level recorded for this manager. Defaults to
    /// ``FirstLaunchPolicy/runAll``.
    public var firstLaunchPolicy: FirstLaunchPolicy<Store> {
        get { lock.withLock { firstLaunch } }
        set { lock.withLock { firstLaunch = newValue } }
    }

    /// What to do when the store's level is past the app version. Defaults to
    /// ``NewerStorePolicy/fail``.
    public var newerStorePolicy: NewerStorePolicy {
        get { lock.withLock { newerStore } }
        set { lock.withLock { newerStore = newValue } }
    }

    /// What to do with a migration registered below the manager's level that was never applied
    /// (a branch merged after a higher version shipped). Defaults to ``LateMigrationPolicy/run``.
    public var lateMigrationPolicy: LateMigrationPolicy {
        get { lock.withLock { late } }
        set { lock.withLock { late = newValue } }
    }

    /// What to do with an applied migration whose fingerprint changed since it ran (its SQL,
    /// file or given fingerprint was edited; see ``MigrationFingerprint``). Defaults to
    /// ``FingerprintPolicy/warn``.
    public var fingerprintPolicy: FingerprintPolicy {
        get { lock.withLock { fingerprint } }
        set { lock.withLock { fingerprint = newValue } }
    }

    /// Registers the migration to `version`, with a body that edits the store's content.
    ///
    /// ```swift
    /// prefs.register("1.1") { defaults in
    ///     try defaults.renameKey("showHelp", to: "onboarding.showHelp")
    /// }
    /// ```
    ///
    /// The body runs once, when the store's record does not show `version` applied and `version`
    /// is at or below the app version; then `version` is added to the record, atomically with the
    /// body's changes where the store allows it. Registering the same version twice is reported as
    /// ``MigrationError/duplicateMigration(manager:version:alsoRegisteredAs:)`` when the coordinator plans.
    ///
    /// - Parameters:
    ///   - version: The migration's version; `"1.1-2"` is a sub-migration of `1.1`.
    ///   - dependencies: Migrations of other managers that must be applied first.
    ///   - transaction: ``TransactionMode/none`` for a body that must run outside the store's
    ///     transaction (`VACUUM`, `CREATE INDEX CONCURRENTLY`): at least once, not exactly once.
    ///   - options: The migration's name and fingerprint (``MigrationOptions/named(_:fingerprint:)-type.method``),
    ///     and options of it that its store understands (``MigrationOption``).
    ///   - body: Edits the store's content.
    @inlinable
    public func register(
        _ version: Version, dependsOn dependencies: [MigrationReference] = [],
        transaction: TransactionMode = .transactional, options: MigrationOptions = MigrationOptions(), _ body: @escaping Body
    ) {
        append(version, dependencies, transaction, options, .plain(body))
    }

    /// Registers the migration to `version`, with a body that also receives its
    /// ``MigrationContext``: progress to report, the level before the step.
    ///
    /// ```swift
    /// library.register("2.0", dependsOn: [prefs.migration("1.1")]) { db, context in
    ///     try db.transformRows(in: "event", columns: ["guid"]) { _ in
    ///         ["guid": .text(UUID().uuidString)]
    ///     }
    /// }
    /// ```
    ///
    /// Otherwise as ``register(_:dependsOn:transaction:options:_:)-(_,_,_,_,Body)``.
    @inlinable
    public func register(
        _ version: Version, dependsOn dependencies: [MigrationReference] = [],
        transaction: TransactionMode = .transactional, options: MigrationOptions = MigrationOptions(),
        _ body: @escaping BodyWithContext
    ) {
        append(version, dependencies, transaction, options, .withContext(body))
    }

    /// Registers the migration to `version` as a resumable one, for large data changes: its body
    /// runs batch by batch, each batch in a transaction of its own that commits the batch's
    /// writes with the migration's progress (its cursor and counts). A kill, a launch budget, a
    /// pause or a cancellation between batches loses no committed batch: the next run, launch or
    /// process resumes after the last one, so each unit is processed once even by a body that is
    /// not idempotent. The migration is recorded applied with its last batch; migrations that
    /// depend on it never start before. The exception is a ``CacheStore``, whose files cannot
    /// commit with its marker: there each batch runs at least once (``CacheStore/batchesAreExactlyOnce``).
    ///
    /// ```swift
    /// library.registerResumable("2.0", deferred: true) { db, batch in
    ///     let after = batch.cursor.flatMap(Int64.init) ?? 0
    ///     let ids = try db.rows(
    ///         "SELECT id FROM note WHERE id > ? ORDER BY id LIMIT ?",
    ///         arguments: [.integer(after), .integer(Int64(batch.limit))]
    ///     ).map { try $0[0] as Int64 }
    ///     for id in ids {
    ///         try db.execute(
    ///             "UPDATE note SET guid = ? WHERE id = ?",
    ///             arguments: [.text(UUID().uuidString), .integer(id)])
    ///     }
    ///     guard let last = ids.last, ids.count == batch.limit else {
    ///         return .finished(processed: ids.count)
    ///     }
    ///     return .more(cursor: String(last), processed: ids.count)
    /// }
    /// ```
    ///
    /// A batch must leave the schema alone and never end its transaction (stores refuse either
    /// with a typed error naming the migration); make schema changes in an ordinary migration
    /// registered before it.
    ///
    /// - Parameters:
    ///   - version: The migration's version.
    ///   - dependencies: Migrations of other managers that must be applied first.
    ///   - batchSize: How many units a batch processes; by default as many as take about 100 ms.
    ///   - options: Options of this migration that its store understands (``MigrationOption``).
    ///   - deferred: Whether `run()` may return before the migration is done: it then goes on in
    ///     the background (``MigrationCoordinator/deferredWork``), and so do the migrations that
    ///     depend on it unless ``MigrationCoordinator/dependentsOfDeferred`` says otherwise.
    ///   - body: Runs one batch.
    public func registerResumable(
        _ version: Version, dependsOn dependencies: [MigrationReference] = [], batchSize: BatchSize = .automatic,
        deferred: Bool = false, options: MigrationOptions = MigrationOptions(), _ body: @escaping BatchBody
    ) {
        append(version, dependencies, .transactional, options, .batched(body, size: batchSize, deferred: deferred))
    }

    /// Registers a squashed migration: one body that does the work of this manager's migrations
    /// from `from` through `through` (Django's `replaces`), so that a new store runs one step
    /// instead of the whole range. Its version is `through`.
    ///
    /// ```swift
    /// library.squash(from: "1.0", through: "1.9") { db in
    ///     try db.execute("CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT, guid TEXT)")
    /// }
    /// ```
    ///
    /// Each store takes one path, which the plan shows (``PlannedStep/Action/squash``):
    /// - with none of the range applied, the squashed body runs once and every migration of the
    ///   range is recorded applied, each with its own name and fingerprint, in the body's
    ///   transaction where the store has one (a kill leaves nothing or all of it);
    /// - part-way through the range, the replaced migrations that are left run as usual;
    /// - past the range, nothing of it runs.
    ///
    /// A dependency on a migration inside the range waits for the squash on a store that takes
    /// it. Keep the replaced migrations registered until no store can be part-way through the
    /// range; then remove them and keep the squash: a store that turns out part-way then gets
    /// ``MigrationError/squashedRangePartWay(manager:store:squash:applied:originalsRegistered:)``
    /// and is left unchanged.
    ///
    /// - Parameters:
    ///   - from: The first migration replaced.
    ///   - through: The last migration replaced, and the squash's version.
    ///   - dependencies: Migrations of other managers the squash needs; while the replaced
    ///     migrations are registered, the last of them waits for them too.
    ///   - options: The squash's name (its fingerprint is not recorded: each replaced migration's
    ///     is), and options by kind its store reads in the squash's transaction, as a migration's.
    ///   - body: Edits the store's content as the whole range would.
    public func squash(
        from: Version, through: Version, dependsOn dependencies: [MigrationReference] = [],
        options: MigrationOptions = MigrationOptions(), _ body: @escaping Body
    ) {
        appendSquash(RegisteredSquash(from: from, through: through, dependencies: dependencies, options: options) { content, _ in
            try body(&content)
        })
    }

    /// Registers a squashed migration whose body also receives its ``MigrationContext``;
    /// otherwise as ``squash(from:through:dependsOn:options:_:)-(_,_,_,_,Body)``.
    public func squash(
        from: Version, through: Version, dependsOn dependencies: [MigrationReference] = [],
        options: MigrationOptions = MigrationOptions(), _ body: @escaping BodyWithContext
    ) {
        appendSquash(RegisteredSquash(from: from, through: through, dependencies: dependencies, options: options, body: body))
    }

    private func appendSquash(_ squash: RegisteredSquash) {
        lock.withLock { registrations.squashes.append(squash) }
    }

    /// Registers a squash of the manager's whole history, from its first registered migration
    /// through its last, whichever they are when a plan or run freezes the manager: the store
    /// products' creation of a new store from the declared schema the history ends in. `resolve`
    /// makes the squash's body from the history then, or throws the typed error a plan throws
    /// before anything runs. Otherwise a squash as ``squash(from:through:dependsOn:options:_:)-(_,_,_,_,BodyWithContext)``.
    package func squashHistory(
        options: MigrationOptions = MigrationOptions(), _ resolve: @escaping @Sendable (SquashedHistory) throws -> BodyWithContext
    ) {
        lock.withLock { registrations.historySquashes.append(RegisteredHistorySquash(options: options, resolve: resolve)) }
    }

    @inlinable
    func append(
        _ version: Version, _ dependencies: [MigrationReference], _ transaction: TransactionMode,
        _ options: MigrationOptions, _ body: RegisteredBody
    ) {
        lock.lock()
        registrations.append(version, dependencies, transaction, options, body)
        lock.unlock()
    }

    /// Names this manager's migration `version`, for another migration's `dependsOn`.
    public func migration(_ version: Version) -> MigrationReference {
        MigrationReference(manager: name, version: version)
    }

    /// Adds a closure that runs once each time the app version changes (MTMigration's
    /// `applicationUpdateBlock`), after this manager's migrations. The app version it ran for is
    /// recorded in the store; `previous` is `nil` the first time. Closures added by several calls
    /// all run, in the order they were added, in one step.
    ///
    /// ```swift
    /// prefs.onAppVersionChange { previous, current in analytics.resetStats() }
    /// ```
    ///
    /// The closure runs while the store holds its lock (or, for SQLite, its write transaction),
    /// so that of several processes launching at once only one runs it; it must not use the
    /// store itself. If the process dies between the closure and the record, the closure runs
    /// again at the next launch: make it idempotent. If one closure throws, the later ones do not
    /// run, nothing is recorded, and all of them run again at the next launch.
    ///
    /// A change means any change: an older app launched after a newer one (a downgrade, or an old
    /// replica restarting during a rolling deploy) runs the closure too, with `previous` newer than
    /// `current`, and records its own version. Only the store's level decides whether an older app
    /// may run at all: a level past the app version applies ``newerStorePolicy``, to this step as to
    /// every other, and the closure does not run.
    public func onAppVersionChange(_ hook: @escaping @Sendable (_ previous: Version?, _ current: Version) throws -> Void) {
        lock.withLock { hooks.append(hook) }
    }

    /// Records `version` as the manager's baseline mark without running anything: every
    /// migration at or below it counts as applied. For an app that adopts the library after
    /// shipping versions that migrated their data by other means.
    ///
    /// Only takes effect when the store has no level for this manager yet, so it is safe to call
    /// at every launch: once the manager has a level, later migrations are never undone by it.
    ///
    /// ```swift
    /// let legacy = UserDefaults.standard.integer(forKey: "stateCompatibilityLevel")
    /// if legacy > 0 { try settings.baseline(at: Version(legacy)) }
    /// ```
    ///
    /// - Returns: Whether the baseline was recorded (`false` when a level already existed).
    /// - Throws: ``MigrationError/invalidVersion(text:reason:manager:)`` for a literal that is not
    ///   a version, before reading the store; the store's error when it cannot be read or written.
    @discardableResult
    public func baseline(at version: Version) throws -> Bool {
        if let error = version.parseError {
            throw MigrationError.invalidVersion(text: error.text, reason: error.reason, manager: name)
        }
        return try StepExecutor.baseline(version, of: name, in: store).isApplied
    }

    /// The level recorded in the store for this manager, or `nil` if none is.
    public func level() throws -> Version? {
        try record().level
    }

    /// What the store records for this manager: the applied migrations (with when and how long
    /// they ran, where the store keeps a history), the baseline mark and the hook's app version.
    /// Reads without changing anything; an empty record when there is none.
    ///
    /// ```swift
    /// for migration in try library.record().applied { print(migration) }  // "1.1 at 2026-… in 0.012 s"
    /// ```
    public func record() throws -> MigrationRecord {
        try readStoreRecords()[name] ?? MigrationRecord()
    }

    /// The versions of this manager's migrations the store records as applied, ascending (those
    /// covered by a baseline mark included, when registered).
    public func appliedMigrations() throws -> [Version] {
        let record = try record()
        let registered = snapshot().registrations.versions.filter { record.isApplied($0) }
        return Array(Set(registered + record.appliedVersions)).sorted()
    }

    /// Accepts the registered migrations as they are now (Flyway's repair): records each applied
    /// migration's current name and fingerprint in place of those recorded when it ran, so that
    /// plans stop reporting edits made since (``MigrationPlan/Manager/changedFingerprints``).
    /// Records written before fingerprints existed get them too, so that later edits are found.
    /// Nothing runs; the store's data is not touched.
    ///
    /// ```swift
    /// // V1.1__add_guid.sql was reformatted after it ran; the schema it made is the same:
    /// try library.repairFingerprints()   // [1.1]
    /// ```
    ///
    /// - Returns: The versions whose record changed, ascending.
    @discardableResult
    public func repairFingerprints() throws -> [Version] {
        let definition = definition()
        var labels: [Version: MigrationLabel] = [:]
        for (position, version) in definition.versions.enumerated() { labels[version] = definition.labels[position] }
        return try StepExecutor.relabel(labels, of: name, in: store)
    }

    /// Forgets the manager's record, so that every migration runs again (for tests and
    /// debugging; the store's data is not touched).
    public func reset() throws {
        try StepExecutor.forget(name, in: store)
    }

    /// The store's records, read with what `resources` keeps when given and the store can use it.
    func readStoreRecords(reusing resources: WorkerResources? = nil) throws -> [String: MigrationRecord] {
        do {
            if let resources, let store = store as? any ReadReusingStore { return try store.readRecords(reusing: resources) }
            return try store.readRecords()
        } catch {
            throw MigrationError.unreadableState(manager: name, store: store.description, reason: "\(error)")
        }
    }

    func snapshot() -> (registrations: Registrations, hooks: [@Sendable (Version?, Version) throws -> Void],
                        firstLaunch: FirstLaunchPolicy<Store>, newerStore: NewerStorePolicy, late: LateMigrationPolicy,
                        fingerprint: FingerprintPolicy) {
        lock.withLock { (registrations, hooks, firstLaunch, newerStore, late, fingerprint) }
    }
}

