import Foundation
#if canImport(Glibc)
import Glibc
#endif
import StoreMigrations

/// A fleet's tenants as the SQLite files of a folder: one tenant per file whose name matches a
/// pattern, its key the file's name without its extension and its ``/StoreMigrations/Tenant/url`` the file.
///
/// ```swift
/// let tenants = SQLiteTenantFolder(folder: accountsFolder, pattern: "*.sqlite")
/// let fleet = MigrationFleet(appVersion: "2.1", tenants: tenants) { tenant, coordinator in
///     let library = try coordinator.manager("library", store: SQLiteStore(url: tenant.url!))
///     library.register("2.0") { db in try db.execute("ALTER TABLE note ADD COLUMN pinned integer") }
/// }
/// ```
///
/// The folder is read entry by entry as the fleet walks it, never listed whole, so a folder of
/// any size takes the same memory. Files come in the order the file system lists them, the
/// same on every walk while the folder does not change. Only regular files (or links to them)
/// are tenants; names that begin with a dot are passed over, as are SQLite's own files beside a
/// database (`-wal`, `-shm`, `-journal`) unless the pattern matches them, which `*.sqlite` does
/// not. Sub-folders are not entered.
///
/// ## Connections
///
/// Each file is a database of its own, which its ``SQLiteStore`` reaches through one connection
/// at a time: a fleet run's ``/StoreMigrations/FleetRunOptions/maxConnections`` is kept whatever
/// its value, and changes nothing. The files open at once are bounded by
/// ``/StoreMigrations/FleetRunOptions/maxTenantsInFlight``: one per SQLite store of each tenant
/// in flight.
///
/// ## Checking a large folder
///
/// The fleet's plan reads each file's records, and most of a tenant's cost is SQLite's own:
/// reading the file's schema and compiling one statement. Each of the plan's threads (and of a
/// run's, which plans each tenant first) keeps one connection for all the tenants it checks, and
/// attaches each file to it in turn rather than opening a connection of its own: most of what an
/// open costs is registering the extensions the system SQLite builds in. A file with
/// a `-wal` or `-journal` beside it, or one a writer holds, is read the ordinary way, as
/// ``SQLiteStore/readRecords()`` reads it; the steps of a run use the store's own connection.
/// The kept connections are closed as the plan or run returns. A SQLite built with memory
/// statistics on (its default, and the Debian package's) counts every allocation under one
/// process-wide mutex, which the tenants read at once all take, hundreds of times a file. SQLite
/// recommends building with `SQLITE_DEFAULT_MEMSTATUS=0`; an app that links the system's SQLite
/// can call `sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0)` from C before its first use of SQLite.
/// The library leaves that process-wide setting to the app.
public struct SQLiteTenantFolder: TenantSource, ConnectionCappedTenantSource {
    /// The folder of tenant databases.
    public let folder: URL
    /// The `fnmatch(3)` pattern a file's name must match: `*.sqlite`, `tenant-*.db`.
    public let pattern: String
    /// The group of the tenant stored at a file, if any: a canary group picked by name, say.
    private let group: (@Sendable (URL) -> String?)?

    /// A source of the files of `folder` whose name matches `pattern`, each in the group
    /// `group` says, if given.
    public init(folder: URL, pattern: String = "*.sqlite", group: (@Sendable (URL) -> String?)? = nil) {
        self.folder = folder
        self.pattern = pattern
        self.group = group
    }

    public var description: String { "the SQLite files \(pattern) in \(folder.path)" }

    /// Keeps `cap` as it is: no file sees more than one connection of the fleet's.
    package func capConnections(perDatabase cap: Int) -> Int? { nil }

    /// Opens the folder for a walk.
    ///
    /// - Throws: ``SQLiteTenantFolderError`` when the folder cannot be opened.
    public func makeTenantIterator() throws -> Iterator {
        guard let directory = opendir(folder.path) else { throw SQLiteTenantFolderError(folder: folder.path, code: errno) }
        return Iterator(directory: OpenDirectory(directory, path: folder.path), source: self)
    }

    /// A walk over the folder, reading one entry at a time.
    public struct Iterator: TenantIterator {
        private let directory: OpenDirectory
        private let source: SQLiteTenantFolder
        /// `source.folder.path` and a `/`, worked out once per walk rather than once per file.
        private let folderPrefix: String

        fileprivate init(directory: OpenDirectory, source: SQLiteTenantFolder) {
            self.directory = directory
            self.source = source
            folderPrefix = source.folder.path + "/"
        }

        /// The next matching file's tenant, or `nil` after the last.
        ///
        /// - Throws: ``SQLiteTenantFolderError`` when reading the folder failed part way.
        public mutating func next() throws -> Tenant? {
            while let name = try directory.nextName() {
                // SQLite's own files beside a database (a pattern such as `b*` matches them too)
                // come and go with its connections: never tenants.
                guard name.utf8.first != UInt8(ascii: "."), !name.hasSuffix("-wal"), !name.hasSuffix("-shm"),
                      !name.hasSuffix("-journal"), fnmatch(source.pattern, name, 0) == 0
                else { continue }
                let path = folderPrefix + name
                guard directory.isRegularFile(name: name, path: path) else { continue }
                let url = URL(fileURLWithPath: path, isDirectory: false)
                return Tenant(Self.key(ofFileNamed: name), group: source.group?(url), url: url)
            }
            return nil
        }

        /// The file's name without its extension (from its last `.` on), or the whole name
        /// when that would leave nothing (`.sqlite`); without `NSString`, whose bridging cost a
        /// fleet's walk more per file than the rest of it.
        static func key(ofFileNamed name: String) -> String {
            guard let dot = name.utf8.lastIndex(of: UInt8(ascii: ".")), dot != name.utf8.startIndex else { return name }
            return String(name[..<dot])
        }
    }
}

/// Why a ``SQLiteTenantFolder`` could not be read.
public struct SQLiteTenantFolderError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// The folder's path.
    public let folder: String
    /// The `errno` of the failed call.
    public let code: Int32

    public var description: String {
        "The folder of SQLite tenants \(folder) could not be read: \(String(cString: strerror(code))) (errno \(code)). "
            + "No tenant of it was migrated; check that the folder exists and that this process may list it."
    }

    public var errorDescription: String? { description }
}

#if canImport(Darwin)
private typealias DirectoryHandle = UnsafeMutablePointer<DIR>
#else
private typealias DirectoryHandle = OpaquePointer
#endif

/// A directory stream, closed when the last walk holding it is let go of.
private final class OpenDirectory {
    private let handle: DirectoryHandle
    private let path: String
    /// The type of the entry `nextName()` returned last, as the listing gives it.
    private var lastType: UInt8 = 0

    init(_ handle: DirectoryHandle, path: String) {
        self.handle = handle
        self.path = path
    }

    deinit {
        closedir(handle)
    }

    /// The next entry's name, `nil` after the last.
    func nextName() throws -> String? {
        errno = 0
        guard let entry = readdir(handle) else {
            if errno != 0 { throw SQLiteTenantFolderError(folder: path, code: errno) }
            return nil
        }
        lastType = entry.pointee.d_type
        return withUnsafeBytes(of: entry.pointee.d_name) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    /// Whether the last entry is a regular file, asking the file system when the listing does
    /// not say (some file systems leave the type unknown) or names a link.
    func isRegularFile(name: String, path: String) -> Bool {
        switch Int32(lastType) {
        case Int32(DT_REG): return true
        case Int32(DT_UNKNOWN), Int32(DT_LNK):
            var status = stat()
            return stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFREG
        default: return false
        }
    }
}
