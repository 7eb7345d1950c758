import Foundation

/// A named set of versioned migrations for one store.
///
/// Get one from ``MigrationCoordinator/manager(_:store:)``, then register migrations in any
/// order: they run in version order, once each, up to the app version.
///
/// ```swift
/// let prefs = try coordinator.manager("preferences", store: PreferencesStore(url: prefsURL))
/// prefs.register("1.1") { defaults in try defaults.renameKey("showHelp", to: "onboarding.showHelp") }
/// prefs.register("1.1-1") { defaults in defaults.removeValue(for: "legacyFlag") }
/// ```
public final class MigrationManager<Store: MigrationStore>: @unchecked Sendable {
    /// A body that edits the store's content.
    public typealias Body = @Sendable (inout Store.Content) throws -> Void
    /// A body that also receives its ``MigrationContext`` to report progress or check cancellation.
    public typealias BodyWithContext = @Sendable (inout Store.Content, MigrationContext) throws -> Void

    /// Registered migrations, in registration order, as parallel arrays: planning reads the
    /// versions of many thousands of migrations, which a generic element type would slow down.
    struct Registrations {
        var versions: [Version] = []
        var dependencies: [[MigrationReference]] = []
        var bodies: [RegisteredBody] = []
    }

    /// A body as it was registered: wrapping a plain body in a closure that takes a context
    /// would cost a runtime type lookup per registration, a measurable part of a launch.
    enum RegisteredBody {
        case plain(Body)
        case withContext(BodyWithContext)

        func run(_ content: inout Store.Content, _ context: MigrationContext) throws {
            switch self {
            case .plain(let body): try body(&content)
            case .withContext(let body): try body(&content, context)
            }
        }
    }

    /// The manager's name, under which its level is recorded in the store.
    public let name: String
    /// The store the manager migrates.
    public let store: Store

    // Registration happens on the app's launch thread while plans may be read from others.
    private let lock = NSLock()
    private var registrations = Registrations()
    private var hook: (@Sendable (Version?, Version) throws -> Void)?
    private var firstLaunch: FirstLaunchPolicy<Store> = .runAll
    private var newerStore: NewerStorePolicy = .fail

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

    /// Registers the migration to `version`.
    ///
    /// The body runs once, when the store's level is below `version` and `version` is at or
    /// below the app version; then the level becomes `version`, atomically with the body's
    /// changes where the store allows it. Registering the same version twice is reported as
    /// ``MigrationError/duplicateMigration(manager:version:)`` when the coordinator plans.
    ///
    /// - Parameters:
    ///   - version: The migration's version; `"1.1-2"` is a sub-migration of `1.1`.
    ///   - dependencies: Migrations of other managers that must be applied first.
    ///   - body: Edits the store's content.
    public func register(_ version: Version, dependsOn dependencies: [MigrationReference] = [], _ body: @escaping Body) {
        append(version, dependencies, .plain(body))
    }

    /// Registers the migration to `version` with a body that receives its ``MigrationContext``.
    ///
    /// ```swift
    /// library.register("2.0", dependsOn: [prefs.migration("1.1")]) { db, context in
    ///     try db.transformRows(in: "event", columns: ["guid"]) { _ in ["guid": .text(UUID().uuidString)] }
    /// }
    /// ```
    public func register(_ version: Version, dependsOn dependencies: [MigrationReference] = [], _ body: @escaping BodyWithContext) {
        append(version, dependencies, .withContext(body))
    }

    private func append(_ version: Version, _ dependencies: [MigrationReference], _ body: RegisteredBody) {
        lock.lock()
        registrations.versions.append(version)
        registrations.dependencies.append(dependencies)
        registrations.bodies.append(body)
        lock.unlock()
    }

    /// Names this manager's migration `version`, for another migration's `dependsOn`.
    public func migration(_ version: Version) -> MigrationReference {
        MigrationReference(manager: name, version: version)
    }

    /// Sets a closure that runs once each time the app version changes (MTMigration's
    /// `applicationUpdateBlock`), after this manager's migrations. The app version it ran for is
    /// recorded in the store; `previous` is `nil` the first time.
    ///
    /// ```swift
    /// prefs.onAppVersionChange { previous, current in analytics.resetStats() }
    /// ```
    ///
    /// The closure runs while the store holds its lock (or, for SQLite, its write transaction),
    /// so that of several processes launching at once only one runs it; it must not use the
    /// store itself. If the process dies between the closure and the record, the closure runs
    /// again at the next launch: make it idempotent.
    public func onAppVersionChange(_ hook: @escaping @Sendable (_ previous: Version?, _ current: Version) throws -> Void) {
        lock.withLock { self.hook = hook }
    }

    /// Records `version` as the level without running anything, for an app that adopts the
    /// library after shipping versions that migrated their data by other means.
    ///
    /// Only takes effect when the store has no level for this manager yet, so it is safe to call
    /// at every launch: once the manager has a level, later migrations are never undone by it.
    ///
    /// - Returns: Whether the level was recorded (`false` when one already existed).
    @discardableResult
    public func baseline(at version: Version) throws -> Bool {
        var recorded = false
        try store.updateState(of: name) { state in
            guard state.level == nil else { return }
            state.level = version
            recorded = true
        }
        return recorded
    }

    /// The level recorded in the store for this manager, or `nil` if none is.
    public func level() throws -> Version? {
        try readState().level
    }

    /// Forgets the manager's level and app-version record, so that every migration runs again
    /// (for tests and debugging; the store's data is not touched).
    public func reset() throws {
        try store.updateState(of: name) { state in state = ManagerState() }
    }

    func readState() throws -> ManagerState {
        try readStoreStates()[name] ?? ManagerState()
    }

    func readStoreStates() throws -> [String: ManagerState] {
        do {
            return try store.readStates()
        } catch {
            throw MigrationError.unreadableState(manager: name, store: store.description, reason: "\(error)")
        }
    }

    func snapshot() -> (registrations: Registrations, hook: (@Sendable (Version?, Version) throws -> Void)?,
                        firstLaunch: FirstLaunchPolicy<Store>, newerStore: NewerStorePolicy) {
        lock.withLock { (registrations, hook, firstLaunch, newerStore) }
    }
}
