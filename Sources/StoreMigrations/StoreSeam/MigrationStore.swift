/// A place where an app keeps data, and where the records of the managers that migrate it are
/// kept: a preferences file, a SQLite database, a cache directory, or your own.
///
/// A store only reads records and runs exclusive transactions. Everything else (whether a
/// migration is already applied, running its body, recording it, baselines, resets and hooks)
/// is decided by the coordinator's step executor, in one place, inside
/// ``transaction(_:_:)``: it reads the records the transaction hands it (read again under the
/// store's lock), runs the body on the content, and changes the records. The store then commits
/// the records with the content, atomically where it can, or nothing at all if the closure
/// throws.
///
/// The protocol lives beside the coordinator rather than among the stores because it is what
/// the coordinator needs of a store: stores implement it, the coordinator knows no store type.
///
/// A store of your own implements three requirements; a class whose properties are all `let`
/// constants of `Sendable` types is `Sendable` as it is:
///
/// ```swift
/// final class KeychainStore: MigrationStore {
///     typealias Content = [String: Data]
///     let service: String
///     var description: String { "keychain service \(service)" }
///
///     func readRecords() throws -> [String: MigrationRecord] {
///         try Keychain.records(service)                  // read only; [:] when there are none
///     }
///     func transaction<T>(
///         _ request: TransactionRequest,
///         _ body: (inout [String: MigrationRecord], inout [String: Data]) throws -> T
///     ) throws -> T {
///         try Keychain.withLock(service) {               // excludes other threads and processes
///             var records = try Keychain.records(service)
///             var items = try Keychain.items(service)
///             let result = try body(&records, &items)    // throws: nothing is written
///             try Keychain.save(items, records, service) // one atomic write
///             return result
///         }
///     }
/// }
/// ```
///
/// It may also name its storage (``identity``), say whether the storage exists yet (``exists``),
/// say that it can be thrown away (``isRebuildable``, ``rebuild(_:)``) and run steps outside a
/// transaction (``runsStepsOutsideTransactions``).
public protocol MigrationStore<Content>: AnyObject, Sendable, CustomStringConvertible {
    /// What a migration body edits: `inout Preferences`, a `Database`, a `CacheDirectory`, ….
    associatedtype Content

    /// The storage the store stands for. Managers on two store objects with one identity (two
    /// `SQLiteStore` objects for one file, say) are scheduled as one store: never two steps at
    /// once. Defaults to the object itself; file stores name the file (``StoreIdentity/file(_:)``).
    var identity: StoreIdentity { get }

    /// Whether the store's contents can be thrown away and rebuilt by the app (a cache). Only
    /// rebuildable stores accept the ``NewerStorePolicy/reset`` policy. Defaults to `false`.
    var isRebuildable: Bool { get }

    /// Whether the storage exists: `false` for a file or a folder that is not there yet, which
    /// the first step creates. The plan and the report say so (``MigrationPlan/Manager/createsStore``,
    /// ``MigrationReport/Manager/createdStore``), so that a mistyped path shows as a new store
    /// rather than as a quiet first launch. Asked only when the store has no records; must
    /// create nothing. Defaults to `true`.
    var exists: Bool { get }

    /// Whether the store runs requests whose ``TransactionRequest/mode`` is
    /// ``TransactionMode/none`` (migrations registered with `transaction: .none`). Defaults to
    /// `false`: the coordinator then refuses such a migration with
    /// ``MigrationError/transactionModeNotSupported(migration:store:)`` before asking the store.
    var runsStepsOutsideTransactions: Bool { get }

    /// Reads the record of every manager that has one, without changing anything.
    ///
    /// Planning calls it, so it must create, convert and lock nothing: a store that does not
    /// exist yet has no records (an empty dictionary). A store that exists but cannot be read
    /// (locked, corrupt, no permission) throws: an unreadable record is never a first launch.
    func readRecords() throws -> [String: MigrationRecord]

    /// Runs `body` with exclusive access to the store, across threads and processes.
    ///
    /// Hands `body` every manager's record, read again now that no one else can change it, and
    /// the content. When `body` returns, commits the content and the records as `body` left them,
    /// together and atomically where the store can; when it throws, commits nothing and rethrows
    /// the error unchanged. A transaction whose records come back unchanged may skip writing.
    ///
    /// `request` says which migration runs, with which options, and where to report a wait for
    /// another holder of the store (``TransactionRequest/waiting(_:)``); a store that neither
    /// waits nor treats migrations apart ignores it. With ``TransactionMode/none`` (only asked of
    /// a store that ``runsStepsOutsideTransactions``) the store holds its exclusive lock and hands
    /// `body` the records read under it, but runs no transaction around `body`, so that
    /// statements a transaction refuses can run; then writes the records `body` left.
    func transaction<T>(_ request: TransactionRequest, _ body: (inout [String: MigrationRecord], inout Content) throws -> T) throws -> T

    /// Throws the content away, for the ``NewerStorePolicy/reset`` policy; called inside
    /// ``transaction(_:_:)``. Only called on rebuildable stores; the default implementation throws
    /// ``MigrationError/resetNotSupported(manager:store:)`` (the coordinator names the manager).
    func rebuild(_ content: inout Content) throws
}

extension MigrationStore {
    /// The store object itself: two objects are two stores.
    public var identity: StoreIdentity { StoreIdentity(object: self) }

    /// Stores are durable unless they say otherwise.
    public var isRebuildable: Bool { false }

    /// Stores exist unless they say otherwise.
    public var exists: Bool { true }

    /// Every step runs in the store's transaction.
    public var runsStepsOutsideTransactions: Bool { false }

    /// Runs `body` in a transaction of the store, as ``transaction(_:_:)`` with a request for no
    /// particular migration: to read or change records and content together outside a run.
    ///
    /// ```swift
    /// let theme = try preferencesStore.transaction { _, preferences in preferences["theme"] }
    /// ```
    public func transaction<T>(_ body: (inout [String: MigrationRecord], inout Content) throws -> T) throws -> T {
        try transaction(TransactionRequest(), body)
    }

    /// Refuses: a store that is not rebuildable must not lose its contents.
    public func rebuild(_ content: inout Content) throws {
        throw MigrationError.resetNotSupported(manager: "", store: description)
    }
}
