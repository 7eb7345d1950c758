/// A place where an app keeps data, and where the levels of the managers that migrate it are
/// recorded: a preferences file, a SQLite database, a cache directory, or your own.
///
/// A store applies one migration at a time and records the migration's version as its manager's
/// level in the same atomic step as the migration's data, where the store allows it, so that a
/// crash never loses data nor runs a step twice. Several managers may share one store: levels are
/// kept per manager name.
///
/// The coordinator never runs two migrations on the same store object at once, but other
/// processes may use the store too: ``apply(_:)`` must read the manager's level again under the
/// store's own lock or transaction and skip a migration that is already applied.
///
/// To write your own store, pick the `Content` that migration bodies edit and implement the four
/// requirements:
///
/// ```swift
/// final class KeychainStore: MigrationStore, @unchecked Sendable {
///     typealias Content = KeychainItems
///     var description: String { "keychain service com.example.app" }
///     func readStates() throws -> [String: ManagerState] { … }
///     func apply(_ migration: StoreMigration<KeychainItems>) throws -> StoreApplyOutcome {
///         var items = try loadItems()                 // under the store's lock
///         let state = try readStates()[migration.manager] ?? ManagerState()
///         if let level = state.level, level >= migration.version { return .alreadyApplied(level: level) }
///         try migration.run(on: &items)
///         try save(items, level: migration.version, for: migration.manager) // one atomic write
///         return .applied
///     }
///     func updateState(of manager: String, _ update: (inout ManagerState) -> Void) throws { … }
/// }
/// ```
public protocol MigrationStore: AnyObject, Sendable, CustomStringConvertible {
    /// What a migration body edits: `inout Preferences`, a `Database`, a `CacheDirectory`, ….
    associatedtype Content

    /// Whether the store's contents can be thrown away and rebuilt by the app (a cache). Only
    /// rebuildable stores accept the ``NewerStorePolicy/reset`` policy. Defaults to `false`.
    var isRebuildable: Bool { get }

    /// Reads the recorded state of every manager that has one in this store.
    ///
    /// A store that does not exist yet has no states (an empty dictionary). A store that exists
    /// but cannot be read (locked, corrupt, no permission) must throw: an unreadable level is
    /// never taken for a first launch.
    func readStates() throws -> [String: ManagerState]

    /// Runs `migration` and records its version as its manager's level, atomically where the
    /// store allows it.
    ///
    /// Reads the manager's level again first (under the store's lock or transaction); if it is
    /// already at or past `migration.version`, another process applied the step: return
    /// ``StoreApplyOutcome/alreadyApplied(level:)`` without running the body. If the body or the
    /// write throws, the level must stay as it was and, for transactional stores, the data too.
    func apply(_ migration: StoreMigration<Content>) throws -> StoreApplyOutcome

    /// Reads one manager's state, lets `update` change it, and writes it back atomically
    /// without touching the store's data. Used for baselines, resets and the app-version record.
    func updateState(of manager: String, _ update: (inout ManagerState) -> Void) throws

    /// Throws away the store's contents and `manager`'s state, for the ``NewerStorePolicy/reset``
    /// policy. Only called on rebuildable stores; the default implementation throws.
    func rebuild(resetting manager: String) throws
}

extension MigrationStore {
    /// Stores are durable unless they say otherwise.
    public var isRebuildable: Bool { false }

    /// Refuses: a store that is not rebuildable must not lose its contents.
    public func rebuild(resetting manager: String) throws {
        throw MigrationError.resetNotSupported(manager: manager, store: description)
    }
}

/// What a store records for one manager.
public struct ManagerState: Sendable, Hashable, Codable {
    /// The highest version applied (or recorded by a baseline), or `nil` if none.
    public var level: Version?
    /// The app version that last ran this manager's app-version-change hook, or `nil` if none did.
    public var appVersion: Version?

    /// Creates a state.
    public init(level: Version? = nil, appVersion: Version? = nil) {
        self.level = level
        self.appVersion = appVersion
    }
}

/// One migration handed to a store: which manager and version it is, and the body to run.
public struct StoreMigration<Content> {
    /// The name of the manager the migration belongs to.
    public let manager: String
    /// The version the manager's level becomes once the migration is applied.
    public let version: Version
    /// The context the body reports progress and checks cancellation through.
    public let context: MigrationContext
    let body: (inout Content, MigrationContext) throws -> Void

    /// Runs the migration's body on `content`.
    public func run(on content: inout Content) throws {
        try body(&content, context)
    }
}

/// What a store did with a migration it was asked to apply.
public enum StoreApplyOutcome: Sendable, Hashable {
    /// The body ran and the level now equals the migration's version.
    case applied
    /// The level was already at or past the migration's version (another process applied it);
    /// the body did not run.
    case alreadyApplied(level: Version)
}
