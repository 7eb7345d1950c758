import Foundation
import Testing
@testable import StoreMigrations

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
        let deadline = Date().addingTimeInterval(10)
        while released != nil, Date() < deadline { Thread.sleep(forTimeInterval: 0.001) }
        settle()
    }

    /// Waits until no connection to the database is left: the last one to close removes the
    /// write-ahead log, and until then it may still be writing. A finished run closes its
    /// connection on the scheduler's thread, just after the run returns.
    func settle() {
        let log = databaseURL.path + "-wal"
        let deadline = Date().addingTimeInterval(10)
        while FileManager.default.fileExists(atPath: log), Date() < deadline {
            Thread.sleep(forTimeInterval: 0.001)
        }
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

/// A small file system of its own (tmpfs), for tests that need a full disk or a read-only
/// folder even as root, who ignores permissions. Unmounted when released.
final class ScratchMount {
    let url: URL

    /// Why no tmpfs can be mounted here (root in a container that allows it can), or `nil`
    /// where one can: found by mounting one, once per test process.
    static let unavailableReason: String? = {
        switch make(size: 64 * 1024) {
        case .success: return nil
        case .failure(let reason): return oneLine(reason.description)
        }
    }()

    static var isAvailable: Bool { unavailableReason == nil }

    /// Why ``makeReadOnly(_:)`` fails here (as root it needs a bind mount), or `nil` where it
    /// works: found by making a scratch folder read-only, once per test process.
    static let readOnlyUnavailableReason: String? = {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("StoreMigrationsReadOnly-\(UUID().uuidString)")
        defer {
            makeWritable(folder)
            try? FileManager.default.removeItem(at: folder)
        }
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try makeReadOnly(folder)
            return nil
        } catch {
            return oneLine("\(error)")
        }
    }()

    static var canMakeReadOnly: Bool { readOnlyUnavailableReason == nil }

    /// `text` on one line, for a skipped test's comment: `mount` explains itself over several.
    private static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
    }

    /// Mounts a tmpfs of `size` bytes at a new temporary folder, or explains why it cannot.
    static func make(size: Int) -> Result<ScratchMount, ProcessTestFailure> {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("StoreMigrationsMount-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        } catch {
            return .failure(ProcessTestFailure("cannot create \(url.path): \(error)"))
        }
        let result = run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size),mode=0755", "tmpfs", url.path])
        guard result.status == 0 else {
            try? FileManager.default.removeItem(at: url)
            return .failure(ProcessTestFailure("mounting a tmpfs failed (\(result.output.trimmingCharacters(in: .whitespacesAndNewlines)))"))
        }
        return .success(ScratchMount(url: url))
    }

    private init(url: URL) {
        self.url = url
    }

    deinit {
        // Lazy, in case a store of the test still has a file open.
        _ = Self.run("/bin/umount", ["-l", url.path])
        try? FileManager.default.removeItem(at: url)
    }

    /// Makes `folder`, below the mount or anywhere, read-only: a read-only bind mount when
    /// running as root (who ignores permissions), removed write permission otherwise.
    static func makeReadOnly(_ folder: URL) throws {
        if geteuid() == 0 {
            for arguments in [["--bind", folder.path, folder.path], ["-o", "remount,ro,bind", folder.path]] {
                let result = run("/bin/mount", arguments)
                guard result.status == 0 else {
                    throw ProcessTestFailure("mount \(arguments.joined(separator: " ")) failed: \(result.output)")
                }
            }
        } else {
            try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: folder.path)
        }
    }

    /// Undoes ``makeReadOnly(_:)``.
    static func makeWritable(_ folder: URL) {
        if geteuid() == 0 {
            _ = run("/bin/umount", [folder.path])
        } else {
            try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
        }
    }

    private static func run(_ tool: String, _ arguments: [String]) -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        do {
            try process.run()
        } catch {
            return (-1, "\(error)")
        }
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test only where a tmpfs can be mounted; elsewhere it shows as skipped, saying why.
    static var needsScratchMount: Self {
        .enabled(if: ScratchMount.isAvailable, "needs a tmpfs mount: \(ScratchMount.unavailableReason ?? "")")
    }

    /// Runs the test only where a folder can be made read-only; elsewhere it shows as skipped,
    /// saying why.
    static var needsReadOnlyFolder: Self {
        .enabled(if: ScratchMount.canMakeReadOnly, "needs a read-only folder: \(ScratchMount.readOnlyUnavailableReason ?? "")")
    }
}
