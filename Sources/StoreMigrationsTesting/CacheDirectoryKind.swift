import Foundation
import StoreMigrations

/// Captures a ``/StoreMigrations/CacheStore``'s directory, its record marker included. A cache
/// is rebuildable: an upgrade check compares its records only.
public struct CacheDirectoryKind: StoreFixtureKind {
    public let name = "cache-directory"

    /// The kind; the tester always has it.
    public init() {}

    public func accepts(_ store: any MigrationStore) -> Bool { store is CacheStore }

    public func capture(_ store: any MigrationStore, into folder: URL) throws -> Bool {
        let directory = try cache(store).directory
        guard FileManager.default.fileExists(atPath: directory.path) else { return false }
        try FileCopy.replace(folder.appendingPathComponent(directory.lastPathComponent, isDirectory: true), with: directory)
        return true
    }

    public func restore(_ store: any MigrationStore, from folder: URL) throws {
        try FileCopy.replace(try cache(store).directory, with: try FileCopy.onlyItem(in: folder))
    }

    public func snapshot(of store: any MigrationStore) throws -> [SnapshotEntry] { [] }

    private func cache(_ store: any MigrationStore) throws -> CacheStore {
        guard let store = store as? CacheStore else { throw UpgradeTestingError(store: store.description, reason: .noKind(store: name)) }
        return store
    }
}
