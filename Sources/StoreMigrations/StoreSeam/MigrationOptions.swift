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
    /// Which of the options every plan asks of every migration are set: a lookup by kind costs a
    /// hash and a dynamic cast, which a plan of hundreds of migrations paid for each one's name
    /// and post-deploy mark even when none had either (Benchmarks/BENCHMARKS.md).
    private var marks = Marks()

    private struct Marks: OptionSet {
        let rawValue: UInt8
        static let name = Marks(rawValue: 1)
        static let fingerprint = Marks(rawValue: 2)
        static let postDeploy = Marks(rawValue: 4)

        /// The mark of `option` set to `value`, if it is one of the marked options.
        static func of<Option: MigrationOption>(_ option: Option.Type, _ value: Option.Value?) -> (mark: Marks, isSet: Bool)? {
            switch ObjectIdentifier(option) {
            case ObjectIdentifier(NameOption.self): return (.name, value != nil)
            case ObjectIdentifier(FingerprintOption.self): return (.fingerprint, value != nil)
            case ObjectIdentifier(PostDeployMigration.self): return (.postDeploy, value as? Bool == true)
            default: return nil
            }
        }
    }

    /// What the migration does, in a few words, for people reading plans, reports, events,
    /// histories and errors: `library@1.1 (add guids to events)`. Stores that keep a history
    /// record it with the applied migration.
    ///
    /// Kept among the options by kind, as the fingerprint is: a launch registers many migrations,
    /// and options of one word copy and free for less than fields of their own.
    public var name: String? {
        get { marks.contains(.name) ? self[NameOption.self] : nil }
        set { self[NameOption.self] = newValue }
    }

    /// The text the migration's ``MigrationFingerprint`` is computed from, for a body the library
    /// cannot see: a string the author changes whenever the body changes (a revision, a summary).
    /// SQL migrations set it to their SQL. A plan reports an applied migration whose fingerprint
    /// differs from the one recorded when it ran (``MigrationManager/fingerprintPolicy``).
    public var fingerprint: String? {
        get { marks.contains(.fingerprint) ? self[FingerprintOption.self] : nil }
        set { self[FingerprintOption.self] = newValue }
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
            if let (mark, isSet) = Marks.of(option, newValue) {
                if isSet { marks.insert(mark) } else { marks.remove(mark) }
            }
        }
    }

    /// Whether the options mark a post-deploy migration (``PostDeployMigration``).
    var isPostDeploy: Bool { marks.contains(.postDeploy) }

    /// Whether no option is set, name and fingerprint included.
    public var isEmpty: Bool { values.isEmpty }
}

private enum NameOption: MigrationOption { typealias Value = String }
private enum FingerprintOption: MigrationOption { typealias Value = String }
