import Foundation
import StoreMigrations

/// Captures a ``/StoreMigrations/CacheStore``'s directory, its record marker included. A cache
/// is rebuildable: an upgrade check compares its records only; two fresh installs are also
/// compared file by file (path, size and content).
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

    /// Every file under the directory but the store's own (its marker), by path, with its size
    /// and a checksum of its bytes.
    public func contents(of store: any MigrationStore) throws -> [SnapshotEntry] {
        let directory = try cache(store).directory
        let files = FileManager.default
        guard files.fileExists(atPath: directory.path) else { return [] }
        var entries: [SnapshotEntry] = []
        // The marker and its temporary copies are records, compared as records.
        for path in try files.subpathsOfDirectory(atPath: directory.path).sorted() where !path.hasPrefix(".store-migrations") {
            let file = directory.appendingPathComponent(path)
            var isDirectory: ObjCBool = false
            guard files.fileExists(atPath: file.path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            let bytes = try Data(contentsOf: file)
            entries.append(SnapshotEntry(.content, "file \(path)", "\(bytes.count) bytes, FNV-1a \(String(Self.checksum(bytes), radix: 16))"))
        }
        return entries
    }

    /// 64-bit FNV-1a: stable from run to run, unlike `Hasher`, so that a diff shows the same value.
    private static func checksum(_ bytes: Data) -> UInt64 {
        bytes.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }

    private func cache(_ store: any MigrationStore) throws -> CacheStore {
        guard let store = store as? CacheStore else { throw UpgradeTestingError(store: store.description, reason: .noKind(store: name)) }
        return store
    }
}
