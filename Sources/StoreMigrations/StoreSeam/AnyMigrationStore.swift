import Foundation

/// A store chosen at run time, as `any MigrationStore<Content>`, wrapped so that a manager can
/// be created for it; the coordinator's `manager(_:store:)` wraps it for you.
///
/// ```swift
/// let store: any MigrationStore<Preferences> = useDefaults
///     ? UserDefaultsStore(suiteName: "group.com.example")
///     : PreferencesStore(url: settingsURL)
/// // A MigrationManager<AnyMigrationStore<Preferences>>:
/// let settings = try coordinator.manager("settings", store: store)
/// settings.register("2.0") { prefs in try prefs.renameKey("theme", to: "appearance") }
/// ```
///
/// Everything is forwarded to ``base``: its identity (so two wrappers of one file are one
/// store to the scheduler), its records, transactions and waits.
public final class AnyMigrationStore<Content>: MigrationStore {
    /// The wrapped store.
    public let base: any MigrationStore<Content>

    init(_ base: any MigrationStore<Content>) {
        self.base = base
    }

    public var description: String { base.description }

    public var identity: StoreIdentity { base.identity }

    public var isRebuildable: Bool { base.isRebuildable }

    public var exists: Bool { base.exists }

    public func readRecords() throws -> [String: MigrationRecord] {
        try base.readRecords()
    }

    public var runsStepsOutsideTransactions: Bool { base.runsStepsOutsideTransactions }

    public func transaction<T>(
        _ request: TransactionRequest, _ body: (inout [String: MigrationRecord], inout Content) throws -> T
    ) throws -> T {
        try base.transaction(request, body)
    }

    public func rebuild(_ content: inout Content) throws {
        try base.rebuild(&content)
    }
}

/// A store that stands for another, whatever its content type: how the coordinator finds what
/// the wrapped store can do beyond ``MigrationStore`` (``ErasableStore``).
protocol WrappingStore {
    var wrapped: any MigrationStore { get }
}

extension AnyMigrationStore: WrappingStore {
    var wrapped: any MigrationStore { base }
}
