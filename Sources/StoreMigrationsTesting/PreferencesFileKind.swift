import Foundation
import StoreMigrations

/// Captures a ``/StoreMigrations/PreferencesStore`` as its file, kept in its own format.
public struct PreferencesFileKind: StoreFixtureKind {
    public let name = "preferences-file"

    /// The kind; the tester always has it.
    public init() {}

    public func accepts(_ store: any MigrationStore) -> Bool { store is PreferencesStore }

    public func capture(_ store: any MigrationStore, into folder: URL) throws -> Bool {
        let url = try preferences(store).url
        guard FileManager.default.fileExists(atPath: url.path) else { return false }
        try FileCopy.replace(folder.appendingPathComponent(url.lastPathComponent), with: url)
        return true
    }

    public func restore(_ store: any MigrationStore, from folder: URL) throws {
        try FileCopy.replace(try preferences(store).url, with: try FileCopy.onlyItem(in: folder))
    }

    public func snapshot(of store: any MigrationStore) throws -> [SnapshotEntry] {
        PreferenceKeys.entries(try preferences(store).read(), levelsKey: PreferencesStore.levelsKey)
    }

    /// Every key with its value.
    public func contents(of store: any MigrationStore) throws -> [SnapshotEntry] {
        PreferenceKeys.contents(try preferences(store).read(), levelsKey: PreferencesStore.levelsKey)
    }

    private func preferences(_ store: any MigrationStore) throws -> PreferencesStore {
        guard let store = store as? PreferencesStore else { throw UpgradeTestingError(store: store.description, reason: .noKind(store: name)) }
        return store
    }
}
