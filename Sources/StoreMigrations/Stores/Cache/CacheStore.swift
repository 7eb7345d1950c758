import Foundation

/// A store for a cache directory: contents the app can rebuild, such as thumbnails or downloads.
///
/// > Important: Cache migrations are **not transactional** and run **at least once**. The body
/// > changes files in place; only after it succeeds is the level written to the marker file. If
/// > the body throws, or the app dies before the marker is written, whatever the body did stays
/// > and the migration runs again on the next launch. Write bodies that can run twice: skip work
/// > already done, and prefer the ``CacheDirectory`` helpers, which are idempotent.
///
/// ### Resumable migrations: each batch at least once
///
/// A resumable migration (``MigrationManager/registerResumable(_:dependsOn:batchSize:deferred:options:_:)``)
/// on a cache keeps its committed batches across kills, launch budgets and pauses, as on any
/// store: the next launch resumes after the last batch whose progress reached the marker. But a
/// batch writes its files in place before its progress is recorded, and a directory of files
/// has no transaction that could publish both at once, so a batch interrupted between the two
/// (a kill, a full disk when the marker is replaced) runs again from the same cursor: **each
/// batch at least once**, not exactly once as on the stores that commit data and progress
/// together (``batchesAreExactlyOnce`` is `false`). Write a batch so that running it twice does
/// what running it once does: name each output after its unit and replace it whole (write it
/// aside and ``CacheDirectory/move(_:to:)`` it into place), and never append to a shared file or
/// keep a count in one.
///
/// ```swift
/// let thumbnails = try coordinator.manager("thumbnails", store: CacheStore(directory: cachesURL))
/// thumbnails.register("2.0") { cache in
///     try cache.removeAll()              // the thumbnail format changed: rebuild lazily
/// }
/// ```
///
/// The records live in a marker file inside the directory, `.store-migrations.json`, which the
/// helpers never list, move or remove. Deleting the whole directory therefore forgets the records
/// with the contents, which for a cache is consistent: an empty cache at no level. The lock file
/// lives beside the directory, not in it (`Thumbnails.store-migrations.lock` next to
/// `Thumbnails/`), so that a body that removes and recreates the directory never lets a second
/// process in while the step runs. A missing directory is an empty store with no records, created
/// on the first step. The store is rebuildable: the ``NewerStorePolicy/reset`` policy empties it.
public final class CacheStore: ErasableStore {
    /// What a migration body works on.
    public typealias Content = CacheDirectory

    /// The name of the marker file holding the levels, inside the directory.
    static let markerName = ".store-migrations.json"
    /// The name of the lock file releases before this one kept inside the directory; the helpers
    /// still leave it alone.
    static let lockName = ".store-migrations.lock"
    /// What the lock file beside the directory adds to the directory's name.
    static let lockSuffix = ".store-migrations.lock"
    private static let levelsKey = "levels"

    /// The cache directory.
    public let directory: URL
    /// How long a step waits for another process to finish with the directory before throwing a
    /// ``FileStoreError`` with operation ``FileStoreError/Operation/waitForLock``.
    public let lockTimeout: Duration
    private let marker: AtomicFile
    /// The lock file, beside the directory, named after the directory a link to it points to, so
    /// that every path to the directory takes one lock.
    var lockURL: URL {
        let resolved = StoreIdentity.resolvingSymbolicLinks(directory)
        return resolved.deletingLastPathComponent().appendingPathComponent(resolved.lastPathComponent + Self.lockSuffix)
    }

    /// A store for the cache directory at `directory`, which need not exist yet.
    ///
    /// - Parameters:
    ///   - directory: The cache directory; created by the first step, never by planning.
    ///   - lockTimeout: How long a step waits for another process migrating the same directory.
    public convenience init(directory: URL, lockTimeout: Duration = .seconds(30)) {
        self.init(directory: directory, lockTimeout: lockTimeout, faults: .none)
    }

    init(directory: URL, lockTimeout: Duration, faults: AtomicFile.Faults) {
        self.directory = directory
        self.lockTimeout = lockTimeout
        self.marker = AtomicFile(
            url: directory.appendingPathComponent(Self.markerName),
            store: "cache directory \(directory.path)", faults: faults)
    }

    /// `"cache directory <path>"`, as errors and reports name the store.
    public var description: String { marker.store }

    /// Always `true`: a cache can be emptied and rebuilt by the app.
    public var isRebuildable: Bool { true }

    /// Always `false`: a batch of a resumable migration on a cache runs **at least once**. Its
    /// files are written before its progress reaches the marker, so a batch interrupted between
    /// the two runs again at the next launch; see "Resumable migrations" above.
    public var batchesAreExactlyOnce: Bool { false }

    /// The directory itself: two store objects for one directory are one store to the scheduler.
    public var identity: StoreIdentity { .file(directory) }

    /// Whether the directory exists; the first step creates it when it does not.
    public var exists: Bool { FileManager.default.fileExists(atPath: directory.path) }

    /// Whether `name`, at the top of the directory, is one of the store's own files: the marker,
    /// an older release's lock file, or a temporary marker left by a writer that died.
    static func isOwnFile(_ name: String) -> Bool {
        name == markerName || name == lockName || name.hasPrefix("." + markerName + ".")
    }

    /// The records kept in the marker file; none when it (or the directory) does not exist.
    /// Reads only: creates nothing, takes no lock.
    ///
    /// - Throws: ``CacheStoreError/invalidMarker(file:reason:migration:)`` when the marker does
    ///   not parse, ``FileStoreError`` when it cannot be read.
    public func readRecords() throws -> [String: MigrationRecord] {
        try readMarker().records.records
    }

    /// Under the lock: reads the marker again, runs `body` on the directory, then records what it
    /// changed in the marker, atomically.
    ///
    /// Not transactional: if `body` throws, its changes to the files stay and the records do not
    /// change. Errors `body` throws come out unchanged. A wait for the lock file is reported to
    /// `request`.
    public func transaction<T>(
        _ request: TransactionRequest, _ body: (inout [String: MigrationRecord], inout CacheDirectory) throws -> T
    ) throws -> T {
        try locked(request) {
            var contents = try readMarker()
            var records = contents.records.records
            try createDirectory()
            var cache = CacheDirectory(url: directory, store: description, migration: nil)
            let result = try body(&records, &cache)
            if contents.records.update(to: records) { try writeMarker(contents) }
            return result
        }
    }

    /// Removes everything in the directory but the store's own files.
    public func rebuild(_ content: inout CacheDirectory) throws {
        try content.removeAll()
    }

    /// Under the lock: forgets every record, then removes everything in the directory but the
    /// store's own files. The records go first: a crash part-way leaves files of a cache that
    /// reads as never migrated, which the replay's migrations find as a first launch would.
    public func erase(_ request: TransactionRequest) throws {
        try locked(request) {
            var contents = try readMarker()
            if contents.records.update(to: [:]) { try writeMarker(contents) }
            try createDirectory()
            try CacheDirectory(url: directory, store: description, migration: nil).removeAll()
        }
    }

    /// The marker's contents: the records, and any other keys a newer release wrote, kept as is.
    private struct MarkerContents {
        var records: RecordFileCodec
        var otherValues: [String: Any]
    }

    private func readMarker() throws -> MarkerContents {
        guard let data = try marker.contents() else {
            return MarkerContents(records: RecordFileCodec(), otherValues: [:])
        }
        do {
            guard var values = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                throw CacheStoreError.invalidMarker(
                    file: marker.url.path, reason: "the top level is not a JSON object", migration: nil)
            }
            let records = try RecordFileCodec(values.removeValue(forKey: Self.levelsKey))
            return MarkerContents(records: records, otherValues: values)
        } catch let error as RecordFileCodec.Invalid {
            let entry = error.manager.map { "the entry of manager \"\($0)\"" } ?? "\"\(Self.levelsKey)\""
            throw CacheStoreError.invalidMarker(file: marker.url.path, reason: "\(entry) \(error.reason)", migration: nil)
        } catch let error as CacheStoreError {
            throw error
        } catch {
            let reason = data.isEmpty ? "the file is empty" : "it is not valid JSON (\((error as NSError).localizedDescription))"
            throw CacheStoreError.invalidMarker(file: marker.url.path, reason: reason, migration: nil)
        }
    }

    private func writeMarker(_ contents: MarkerContents) throws {
        var values = contents.otherValues
        values[Self.levelsKey] = contents.records.object
        // Strings, lists and dictionaries of them, plus what JSONSerialization itself read, always encode.
        let data = try JSONSerialization.data(withJSONObject: values, options: [.sortedKeys, .prettyPrinted])
        // A body may have deleted the directory itself rather than its contents.
        try createDirectory()
        try marker.replaceContents(with: data)
    }

    private func createDirectory() throws {
        try FileStoreError.createFolder(directory, store: description)
    }

    /// Runs `body` holding the store's lock, beside the directory, whose folder it creates if
    /// needed: running creates what it needs, planning (``readRecords()``) never does.
    private func locked<T>(_ request: TransactionRequest, _ body: () throws -> T) throws -> T {
        try FileLock.withStoreLock(url: lockURL, store: description, timeout: lockTimeout, guarding: marker, waiting: request, body)
    }
}
