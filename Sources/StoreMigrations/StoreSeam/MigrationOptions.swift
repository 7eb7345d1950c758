/// An option of one migration that a store understands, declared by the store's product and set
/// when the migration is registered (a SQLite store's foreign-key check, say). The coordinator
/// freezes it with the manager's definition and hands it to the store's transaction with the step
/// (``TransactionRequest/options``); nothing of one migration is kept on a store object.
///
/// ```swift
/// enum Compression: MigrationOption { typealias Value = Bool }
/// archive.register("2.0", options: MigrationOptions(Compression.self, true)) { files in … }
/// // in the store's transaction:
/// let compresses = request.options[Compression.self] ?? false
/// ```
public protocol MigrationOption {
    /// The option's value.
    associatedtype Value: Sendable
}

/// The options of one migration: its name and fingerprint, and options by kind that its store
/// understands (see ``MigrationOption``).
///
/// ```swift
/// library.register("1.1", options: .named("add guids to events")) { db in … }
/// let options = MigrationOptions.named("backfill titles", fingerprint: "titles from notes, v2")
/// library.register("1.2", options: options) { db in … }
/// orders.register("2.0-1", options: .named("drop legacy_ref").postDeploy) { db in … }
/// ```
///
/// Options combine: ``named(_:fingerprint:)-method``, ``postDeploy-property`` and ``setting(_:_:)`` each return
/// the options they are called on with one more set.
public struct MigrationOptions: Sendable {
    private var values: [ObjectIdentifier: any Sendable] = [:]
    /// The name and the fingerprint's text, in one box of their own rather than among the
    /// options by kind: a launch registers many migrations, and a name or a fingerprint given
    /// among the options by kind made a dictionary and hashed into it (about 1k instructions a
    /// registration) where a box is one allocation; one word still copies and frees for less
    /// than two strings would.
    private var labels: Labels?
    /// Whether the options mark a post-deploy migration (``PostDeployMigration``), kept as it is
    /// set: a lookup by kind costs a hash and a dynamic cast, which a plan of hundreds of
    /// migrations paid for each one (Benchmarks/BENCHMARKS.md).
    private(set) var isPostDeploy = false

    private final class Labels: Sendable {
        let name: String?
        let fingerprint: FingerprintText?

        init(name: String?, fingerprint: FingerprintText?) {
            self.name = name
            self.fingerprint = fingerprint
        }

        /// A box for `name` and `fingerprint`, or none when neither is set.
        static func boxing(name: String?, fingerprint: FingerprintText?) -> Labels? {
            name == nil && fingerprint == nil ? nil : Labels(name: name, fingerprint: fingerprint)
        }
    }

    /// What the migration does, in a few words, for people reading plans, reports, events,
    /// histories and errors: `library@1.1 (add guids to events)`. Stores that keep a history
    /// record it with the applied migration.
    public var name: String? {
        get { labels?.name }
        set { labels = .boxing(name: newValue, fingerprint: fingerprintText) }
    }

    /// The text the migration's ``MigrationFingerprint`` is computed from, for a body the library
    /// cannot see: a string the author changes whenever the body changes (a revision, a summary).
    /// A SQL migration without one is fingerprinted by its SQL. A plan reports an applied
    /// migration whose fingerprint differs from the one recorded when it ran
    /// (``MigrationManager/fingerprintPolicy``).
    public var fingerprint: String? {
        get { labels?.fingerprint?.text }
        set { labels = .boxing(name: name, fingerprint: newValue.map(FingerprintText.given)) }
    }

    /// The fingerprint's text as registered: given, or made when first read (a declared
    /// schema's statements), which ``fingerprint`` would make at once.
    @usableFromInline
    package var fingerprintText: FingerprintText? {
        get { labels?.fingerprint }
        set { labels = .boxing(name: name, fingerprint: newValue) }
    }

    /// No options: every store's defaults.
    public init() {}

    /// A name, and a fingerprint's text when given.
    public static func named(_ name: String, fingerprint: String? = nil) -> MigrationOptions {
        MigrationOptions().named(name, fingerprint: fingerprint)
    }

    /// One option set to `value`.
    public init<Option: MigrationOption>(_ option: Option.Type, _ value: Option.Value) {
        self[option] = value
    }

    /// These options with the name, and the fingerprint's text when given: options combine in
    /// either order, `.postDeploy.named("drop legacy_ref")`.
    public func named(_ name: String, fingerprint: String? = nil) -> MigrationOptions {
        var options = self
        options.name = name
        if let fingerprint { options.fingerprint = fingerprint }
        return options
    }

    /// These options with `option` set to `value`.
    public func setting<Option: MigrationOption>(_ option: Option.Type, _ value: Option.Value) -> MigrationOptions {
        var options = self
        options[option] = value
        return options
    }

    /// The value of `option`, or `nil` when the migration leaves it to the store.
    public subscript<Option: MigrationOption>(_ option: Option.Type) -> Option.Value? {
        get { values[ObjectIdentifier(option)] as? Option.Value }
        set {
            values[ObjectIdentifier(option)] = newValue
            if ObjectIdentifier(option) == ObjectIdentifier(PostDeployMigration.self) { isPostDeploy = newValue as? Bool == true }
        }
    }

    /// Whether no option is set, name and fingerprint included.
    public var isEmpty: Bool { values.isEmpty && labels == nil }
}
