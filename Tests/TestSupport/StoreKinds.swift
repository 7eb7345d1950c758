import Foundation
import StoreMigrations
import StoreMigrationsSQLite
import Testing
#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

// MARK: - The file-backed store kinds

/// The file-backed store kinds, each kept in the folder `store` below a root, which holds
/// everything the store owns (the cache's lock file, beside its directory, included).
package enum FileStoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case preferencesJSON
    case preferencesPropertyList
    case sqlite
    case cache

    /// The file-backed kinds with one format each.
    package static let oneOfEach: [FileStoreKind] = [.preferencesJSON, .sqlite, .cache]

    package var testDescription: String { rawValue }

    package func folder(in root: URL) -> URL { root.appendingPathComponent("store", isDirectory: true) }

    /// The preferences file, the database, or the cache directory.
    package func storeURL(in root: URL) -> URL {
        switch self {
        case .preferencesJSON: return folder(in: root).appendingPathComponent("settings.json")
        case .preferencesPropertyList: return folder(in: root).appendingPathComponent("settings.plist")
        case .sqlite: return folder(in: root).appendingPathComponent("library.sqlite")
        case .cache: return folder(in: root).appendingPathComponent("Thumbnails", isDirectory: true)
        }
    }

    /// What a run leaves in the root, relative to it.
    package var pathsCreatedByRunning: [String] {
        switch self {
        case .preferencesJSON: return ["store", "store/settings.json", "store/settings.json.lock"]
        case .preferencesPropertyList: return ["store", "store/settings.plist", "store/settings.plist.lock"]
        case .sqlite: return ["store", "store/library.sqlite"]
        case .cache:
            return ["store", "store/Thumbnails", "store/Thumbnails/.store-migrations.json",
                    "store/Thumbnails.store-migrations.lock", "store/Thumbnails/runs.log"]
        }
    }

    /// A new store object of this kind.
    package func makeStore(root: URL) -> any MigrationStore {
        switch self {
        case .preferencesJSON: return PreferencesStore(url: storeURL(in: root), format: .json)
        case .preferencesPropertyList: return PreferencesStore(url: storeURL(in: root), format: .propertyList)
        case .sqlite: return SQLiteStore(url: storeURL(in: root))
        case .cache: return CacheStore(directory: storeURL(in: root))
        }
    }

    /// Adds manager `name` on a new store object of this kind, registering `versions`. Each body
    /// counts itself in `bodies` (`name@version`) and in the store's own data, with the step
    /// where the store allows it: `runs.<version>` in the preferences, table `runs` in the
    /// database, a line in `runs.log` in the cache. Returns a type-erased handle on the manager.
    @discardableResult
    package func addManager(
        _ name: String, to coordinator: MigrationCoordinator, root: URL, versions: [Version],
        bodies: BodyCounter, latePolicy: LateMigrationPolicy = .run
    ) throws -> AnyFileStoreManager {
        switch self {
        case .preferencesJSON, .preferencesPropertyList:
            let store = makeStore(root: root) as! PreferencesStore
            let manager = try coordinator.manager(name, store: store)
            manager.lateMigrationPolicy = latePolicy
            for version in versions {
                let key = version.description
                manager.register(version) { prefs in
                    bodies.count("\(name)@\(key)")
                    try prefs.set((prefs.int(["runs", key]) ?? 0) + 1, for: ["runs", key])
                }
            }
            return AnyFileStoreManager(manager)
        case .sqlite:
            let manager = try coordinator.manager(name, store: makeStore(root: root) as! SQLiteStore)
            manager.lateMigrationPolicy = latePolicy
            for version in versions {
                let key = version.description
                manager.register(version) { db in
                    bodies.count("\(name)@\(key)")
                    try db.execute(
                        """
                        CREATE TABLE IF NOT EXISTS runs(version TEXT PRIMARY KEY NOT NULL, count INTEGER NOT NULL);
                        INSERT INTO runs(version, count) VALUES (?, 1) ON CONFLICT(version) DO UPDATE SET count = count + 1;
                        """, arguments: [.text(key)])
                }
            }
            return AnyFileStoreManager(manager)
        case .cache:
            let manager = try coordinator.manager(name, store: makeStore(root: root) as! CacheStore)
            manager.lateMigrationPolicy = latePolicy
            for version in versions {
                let key = version.description
                manager.register(version) { cache in
                    bodies.count("\(name)@\(key)")
                    try appendLine(key, to: cache.fileURL(for: "runs.log"))
                }
            }
            return AnyFileStoreManager(manager)
        }
    }

    /// How many times each version's body ran, as the store's own data says.
    package func onDiskRuns(root: URL) throws -> [String: Int] {
        let url = storeURL(in: root)
        switch self {
        case .preferencesJSON, .preferencesPropertyList:
            let prefs = try PreferencesStore(url: url, format: self == .preferencesJSON ? .json : .propertyList).read()
            var runs: [String: Int] = [:]
            for key in prefs.dictionary(["runs"])?.keys.sorted() ?? [] { runs[key] = prefs.int(["runs", key]) }
            return runs
        case .sqlite:
            guard try !RawSQLite.strings("SELECT name FROM sqlite_master WHERE name = 'runs'", at: url.path).isEmpty else { return [:] }
            var runs: [String: Int] = [:]
            for row in try RawSQLite.rows("SELECT version, count FROM runs", at: url.path) {
                runs[row[0] ?? ""] = row[1].flatMap { Int($0) }
            }
            return runs
        case .cache:
            let log = url.appendingPathComponent("runs.log")
            guard FileManager.default.fileExists(atPath: log.path) else { return [:] }
            var runs: [String: Int] = [:]
            for line in try String(contentsOf: log, encoding: .utf8).split(separator: "\n") { runs[String(line), default: 0] += 1 }
            return runs
        }
    }

    /// Gives the store's files and folders modes a rewrite would not keep by chance.
    package func makeModesUnusual(root: URL) throws {
        let manager = FileManager.default
        switch self {
        case .preferencesJSON, .preferencesPropertyList, .sqlite:
            try manager.setAttributes([.posixPermissions: 0o640], ofItemAtPath: storeURL(in: root).path)
        case .cache:
            try manager.setAttributes([.posixPermissions: 0o750], ofItemAtPath: storeURL(in: root).path)
            try manager.setAttributes(
                [.posixPermissions: 0o600], ofItemAtPath: storeURL(in: root).appendingPathComponent(".store-migrations.json").path)
        }
        try manager.setAttributes([.posixPermissions: 0o751], ofItemAtPath: folder(in: root).path)
    }
}

/// A manager of any file-backed store, for tests written once for every kind.
package struct AnyFileStoreManager {
    private let setHook: (@escaping @Sendable (Version?, Version) throws -> Void) -> Void

    package init<Store: MigrationStore>(_ manager: MigrationManager<Store>) {
        setHook = { manager.onAppVersionChange($0) }
    }

    package func onAppVersionChange(_ hook: @escaping @Sendable (Version?, Version) throws -> Void) { setHook(hook) }
}

/// Counts how many times each body ran, from any thread.
package final class BodyCounter: @unchecked Sendable {
    package init() {}
    private let lock = NSLock()
    private var storage: [String: Int] = [:]

    package func count(_ key: String) { lock.withLock { storage[key, default: 0] += 1 } }
    package var counts: [String: Int] { lock.withLock { storage } }
    package var total: Int { counts.values.reduce(0, +) }
}

/// Appends `line` and a newline to the file at `url`, creating it if needed.
package func appendLine(_ line: String, to url: URL) throws {
    let descriptor = open(url.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
    guard descriptor >= 0 else { throw TestFailure(message: "cannot open \(url.path): errno \(errno)") }
    defer { close(descriptor) }
    let bytes = Array((line + "\n").utf8)
    guard write(descriptor, bytes, bytes.count) == bytes.count else {
        throw TestFailure(message: "cannot append to \(url.path): errno \(errno)")
    }
}

/// Waits (at most ``eventWaitBound``) until no SQLite `-wal` or `-shm` file is left below `root`:
/// the last connection to a WAL database removes them when it closes, which a finished run's
/// store does on the scheduler's thread just after the run returns.
package func settleDatabases(below root: URL) {
    waitUntil {
        let paths = (try? FileManager.default.subpathsOfDirectory(atPath: root.path)) ?? []
        return !paths.contains { $0.hasSuffix("-wal") || $0.hasSuffix("-shm") }
    }
}

// MARK: - Snapshots of a folder

/// Every path below a folder (the folder itself as `.`), with its mode, inode, and for files
/// their bytes, for symbolic links their target: two snapshots are equal only when nothing was
/// created, removed, rewritten (even with the same bytes) or had its mode changed.
package struct FolderSnapshot: Equatable, CustomStringConvertible {
    package struct Entry: Equatable, CustomStringConvertible {
        let mode: UInt32
        let inode: UInt64
        let contents: Data?
        let linkTarget: String?

        package var description: String {
            "mode \(String(mode, radix: 8)), inode \(inode)"
                + (contents.map { ", \($0.count) bytes" } ?? "") + (linkTarget.map { " → \($0)" } ?? "")
        }
    }

    private(set) var entries: [String: Entry] = [:]

    /// The snapshot of `root`, or an empty one when it does not exist.
    package init(_ root: URL) throws {
        try visit(root.path, relative: ".")
    }

    /// Every path, sorted.
    package var paths: [String] { entries.keys.sorted() }

    private mutating func visit(_ path: String, relative: String) throws {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            if errno == ENOENT, relative == "." { return }
            throw TestFailure(message: "lstat \(path): errno \(errno)")
        }
        let type = status.st_mode & S_IFMT
        var contents: Data?
        var target: String?
        if type == S_IFREG {
            contents = try Data(contentsOf: URL(fileURLWithPath: path))
        } else if type == S_IFLNK {
            target = try FileManager.default.destinationOfSymbolicLink(atPath: path)
        }
        entries[relative] = Entry(mode: UInt32(status.st_mode), inode: UInt64(status.st_ino), contents: contents, linkTarget: target)
        if type == S_IFDIR {
            for name in try FileManager.default.contentsOfDirectory(atPath: path) {
                try visit(path + "/" + name, relative: relative == "." ? name : relative + "/" + name)
            }
        }
    }

    /// What differs from `earlier`, one path a line.
    package func changes(since earlier: FolderSnapshot) -> String {
        var lines: [String] = []
        for path in Set(entries.keys).union(earlier.entries.keys).sorted() {
            switch (earlier.entries[path], entries[path]) {
            case (nil, let now?): lines.append("created \(path) (\(now))")
            case (let then?, nil): lines.append("removed \(path) (\(then))")
            case (let then?, let now?) where then != now: lines.append("changed \(path): \(then) → \(now)")
            default: break
            }
        }
        return lines.isEmpty ? "nothing" : lines.joined(separator: "\n")
    }

    package var description: String {
        paths.map { "\($0): \(entries[$0]!)" }.joined(separator: "\n")
    }
}

// MARK: - SQLite outside any store

/// SQLite's C API used directly, as another program or an older release of the library writes a
/// database: no store, no WAL switch, no store tables.
package enum RawSQLite {
    /// Runs `sql` (several statements allowed) on the database at `path`, creating it if needed.
    package static func execute(_ sql: String, at path: String) throws {
        try withConnection(path) { handle in
            var message: UnsafeMutablePointer<CChar>?
            guard sqlite3_exec(handle, sql, nil, nil, &message) == SQLITE_OK else {
                let text = message.map { String(cString: $0) } ?? "unknown error"
                sqlite3_free(message)
                throw TestFailure(message: "\(sql): \(text)")
            }
        }
    }

    /// Every row of the query `sql`, each column as text (`nil` for NULL).
    package static func rows(_ sql: String, at path: String) throws -> [[String?]] {
        // Read-write, so that closing the last connection to a WAL database removes its -wal
        // and -shm files, as a read-only one would not.
        try withConnection(path, flags: SQLITE_OPEN_READWRITE) { handle in
            var statement: OpaquePointer?
            guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK else {
                throw TestFailure(message: "\(sql): \(String(cString: sqlite3_errmsg(handle)))")
            }
            defer { sqlite3_finalize(statement) }
            var rows: [[String?]] = []
            while true {
                let status = sqlite3_step(statement)
                if status == SQLITE_DONE { return rows }
                guard status == SQLITE_ROW else {
                    throw TestFailure(message: "\(sql): \(String(cString: sqlite3_errmsg(handle)))")
                }
                rows.append((0..<sqlite3_column_count(statement)).map { column in
                    sqlite3_column_text(statement, column).map { String(cString: $0) }
                })
            }
        }
    }

    /// The first column of every row of `sql`.
    package static func strings(_ sql: String, at path: String) throws -> [String?] {
        try rows(sql, at: path).map { $0.first ?? nil }
    }

    /// The versions `store_migrations_history` holds at `path`, in the order written; none when
    /// the table does not exist.
    package static func recordedVersions(at path: String) throws -> [String?] {
        let table = try strings("SELECT name FROM sqlite_schema WHERE name = 'store_migrations_history'", at: path)
        return table.isEmpty ? [] : try strings("SELECT version FROM store_migrations_history ORDER BY id", at: path)
    }

    /// Bytes 18 and 19 of the database header, the file format's write and read versions:
    /// 1 for a rollback journal, 2 for WAL.
    package static func journalModeBytes(of path: String) throws -> [UInt8] {
        let header = try Data(contentsOf: URL(fileURLWithPath: path)).prefix(20)
        guard header.count == 20 else { throw TestFailure(message: "\(path) has no SQLite header") }
        return [header[18], header[19]]
    }

    private static func withConnection<T>(
        _ path: String, flags: Int32 = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, _ body: (OpaquePointer?) throws -> T
    ) throws -> T {
        var handle: OpaquePointer?
        let status = sqlite3_open_v2(path, &handle, flags, nil)
        defer { sqlite3_close_v2(handle) }
        guard status == SQLITE_OK else {
            throw TestFailure(message: "cannot open \(path): \(String(cString: sqlite3_errstr(status)))")
        }
        sqlite3_busy_timeout(handle, 5_000)
        return try body(handle)
    }
}

// MARK: - Steps and meters

/// A migration for a store, run outside a coordinator.
package func sqliteStep(
    _ version: Version, manager: String = "library", run: (any MigrationRunControl)? = nil,
    _ body: @escaping (Database) throws -> Void
) -> TestMigration<Database> {
    TestMigration(manager: manager, version: version, run: run) { db in try body(db) }
}

/// Counts what is in flight, by key, and the most ever in flight at once: for each key alone,
/// and for every set of keys together (`"a+b"`, keys sorted).
package final class InFlightMeter: @unchecked Sendable {
    package init() {}
    private let lock = NSLock()
    private var current: [String: Int] = [:]
    private var maxima: [String: Int] = [:]

    package func enter(_ key: String) {
        lock.withLock {
            current[key, default: 0] += 1
            recordMaxima()
        }
    }

    package func leave(_ key: String) {
        lock.withLock { current[key, default: 0] -= 1 }
    }

    /// The most ever in flight at once under `keys` (`"a"`, or `"a+b"` for a and b together).
    package func maximum(_ keys: String) -> Int {
        lock.withLock { maxima[keys.split(separator: "+").sorted().joined(separator: "+")] ?? 0 }
    }

    private func recordMaxima() {
        let keys = current.keys.sorted()
        // Every non-empty subset of the keys seen so far: tests use a handful.
        for mask in 1..<(1 << keys.count) {
            let subset = keys.indices.filter { mask & (1 << $0) != 0 }
            let name = subset.map { keys[$0] }.joined(separator: "+")
            let total = subset.reduce(0) { $0 + current[keys[$1], default: 0] }
            maxima[name] = max(maxima[name] ?? 0, total)
        }
    }

    /// An observer that counts each step of a run, from its start event to its end event, under
    /// the key `key(manager)`: the scheduler's view of what runs at once, lock waits included.
    package func observer(key: @escaping @Sendable (String) -> String) -> @Sendable (MigrationEvent) -> Void {
        { [self] event in
            switch event {
            case .started(let step): enter(key(step.manager))
            case .finished(let step, _), .failed(let step, _): leave(key(step.manager))
            default: break
            }
        }
    }
}
