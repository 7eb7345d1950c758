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

/// The options of one migration, by kind; see ``MigrationOption``.
public struct MigrationOptions: Sendable {
    private var values: [ObjectIdentifier: any Sendable] = [:]

    /// No options: every store's defaults.
    public init() {}

    /// One option set to `value`.
    public init<Option: MigrationOption>(_ option: Option.Type, _ value: Option.Value) {
        self[option] = value
    }

    /// The value of `option`, or `nil` when the migration leaves it to the store.
    public subscript<Option: MigrationOption>(_ option: Option.Type) -> Option.Value? {
        get { values[ObjectIdentifier(option)] as? Option.Value }
        set { values[ObjectIdentifier(option)] = newValue }
    }

    /// Whether no option is set.
    public var isEmpty: Bool { values.isEmpty }
}
