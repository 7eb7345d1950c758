import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// A preferences file, a SQLite database and a cache directory, each in a folder of its own
/// under `root` so that one store's folder can be made read-only or full alone. Version 1.0 of
/// each store holds a little data; version 1.1 adds more; version 3.0 is a newer app's.
struct ThreeStores {
    let root: URL
    var preferencesURL: URL { root.appendingPathComponent("prefs/settings.json") }
    var databaseURL: URL { root.appendingPathComponent("db/library.sqlite") }
    var cacheURL: URL { root.appendingPathComponent("cache", isDirectory: true) }

    /// How large a value each 1.1 migration writes.
    var growth = 1_000

    /// A coordinator at `appVersion` migrating the given stores (by default, plain ones).
    func coordinator(
        _ appVersion: Version,
        preferences: PreferencesStore? = nil, database: SQLiteStore? = nil, cache: CacheStore? = nil,
        versions: [Version] = ["1.0", "1.1"], newerStorePolicies: [String: NewerStorePolicy] = [:]
    ) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: appVersion)
        let prefs = try coordinator.manager("prefs", store: preferences ?? PreferencesStore(url: preferencesURL))
        let library = try coordinator.manager("library", store: database ?? SQLiteStore(url: databaseURL))
        let thumbnails = try coordinator.manager("thumbnails", store: cache ?? CacheStore(directory: cacheURL))
        prefs.newerStorePolicy = newerStorePolicies["prefs"] ?? .fail
        library.newerStorePolicy = newerStorePolicies["library"] ?? .fail
        thumbnails.newerStorePolicy = newerStorePolicies["thumbnails"] ?? .fail
        let growth = growth
        for version in versions {
            let label = "written by \(version)"
            prefs.register(version) { prefs in
                try prefs.set(label, for: ["history", version.description])
                if version >= "1.1" { try prefs.set(String(repeating: "x", count: growth), for: "large") }
            }
            library.register(version) { db in
                try db.execute("CREATE TABLE IF NOT EXISTS entry(id INTEGER PRIMARY KEY, label TEXT, payload BLOB)")
                try db.execute(
                    "INSERT INTO entry(label, payload) VALUES (?, ?)",
                    arguments: [.text(label), .blob(Data(count: version >= "1.1" ? growth : 10))])
            }
            thumbnails.register(version) { cache in
                if version < "1.1" {
                    try Data(label.utf8).write(to: cache.fileURL(for: "\(version).txt"))
                }
            }
        }
        return coordinator
    }

    /// Runs every migration up to `appVersion` and waits until the run has let go of its SQLite
    /// store, whose connection, closing, checkpoints and removes the write-ahead log: a later
    /// snapshot of the bytes must not race with that.
    func migrate(to appVersion: Version) throws {
        weak var released: SQLiteStore?
        do {
            let database = SQLiteStore(url: databaseURL)
            released = database
            try coordinator(appVersion, database: database).run()
        }
        waitUntil { released == nil }
        settle()
    }

    /// Waits until no connection to the database is left: the last one to close removes the
    /// write-ahead log, and until then it may still be writing. A finished run closes its
    /// connection on the scheduler's thread, just after the run returns.
    func settle() {
        let log = databaseURL.path + "-wal"
        waitUntil { !FileManager.default.fileExists(atPath: log) }
    }

    /// Every file below `root` and its bytes, except SQLite's shared-memory index (`-shm`),
    /// which readers write to and which SQLite rebuilds from the database and its log.
    func bytes() throws -> [String: Data] {
        var files: [String: Data] = [:]
        for path in try FileManager.default.subpathsOfDirectory(atPath: root.path) where !path.hasSuffix("-shm") {
            let url = root.appendingPathComponent(path)
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder), !isFolder.boolValue {
                files[path] = try Data(contentsOf: url)
            }
        }
        return files
    }
}
