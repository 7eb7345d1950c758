import Foundation
import StoreMigrations

/// Captures a ``/StoreMigrations/UserDefaultsStore``'s domain as a property list, and restores
/// it into the suite the location's coordinator names (``StoreLocation/suiteName(_:)``).
public struct UserDefaultsKind: StoreFixtureKind {
    public let name = "user-defaults"
    static let fileName = "domain.plist"

    /// The kind; the tester always has it.
    public init() {}

    public func accepts(_ store: any MigrationStore) -> Bool { store is UserDefaultsStore }

    public func capture(_ store: any MigrationStore, into folder: URL) throws -> Bool {
        let store = try defaultsStore(store)
        guard let domain = try defaults(store).persistentDomain(forName: store.domainName), !domain.isEmpty else { return false }
        let data = try PropertyListSerialization.data(fromPropertyList: domain, format: .xml, options: 0)
        try data.write(to: folder.appendingPathComponent(Self.fileName), options: .atomic)
        return true
    }

    public func restore(_ store: any MigrationStore, from folder: URL) throws {
        let store = try defaultsStore(store)
        let data = try Data(contentsOf: folder.appendingPathComponent(Self.fileName))
        guard let domain = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] else {
            throw UpgradeTestingError(
                store: store.description, reason: .notAFixture(folder: folder.path, detail: "\(Self.fileName) is not a dictionary"))
        }
        try defaults(store).setPersistentDomain(domain, forName: store.domainName)
    }

    public func snapshot(of store: any MigrationStore) throws -> [SnapshotEntry] {
        PreferenceKeys.entries(try defaultsStore(store).read(), levelsKey: UserDefaultsStore.levelsKey)
    }

    /// Every key with its value.
    public func contents(of store: any MigrationStore) throws -> [SnapshotEntry] {
        PreferenceKeys.contents(try defaultsStore(store).read(), levelsKey: UserDefaultsStore.levelsKey)
    }

    public func discard(_ store: any MigrationStore) throws {
        let store = try defaultsStore(store)
        try defaults(store).removePersistentDomain(forName: store.domainName)
    }

    private func defaultsStore(_ store: any MigrationStore) throws -> UserDefaultsStore {
        guard let store = store as? UserDefaultsStore else { throw UpgradeTestingError(store: store.description, reason: .noKind(store: name)) }
        return store
    }

    private func defaults(_ store: UserDefaultsStore) throws -> UserDefaults {
        guard let suite = store.suiteName else { return .standard }
        guard let defaults = UserDefaults(suiteName: suite) else {
            throw UpgradeTestingError(store: store.description, reason: .noKind(store: "user defaults suite \(suite), which cannot be opened"))
        }
        return defaults
    }
}
