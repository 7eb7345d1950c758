import Foundation

/// A store for a cache directory: contents the app can rebuild, such as thumbnails or downloads.
///
/// > Important: Cache migrations are **not transactional** and run **at least once**. The body
/// > changes files in place; only after it succeeds is the level written to the marker file. If
/// > the body throws, or the app dies before the marker is written, whatever the body did stays
/// > and the migration runs again on the next launch. Write bodies that can run twice: skip work
/// > already done, and prefer the ``CacheDirectory`` helpers, which are idempotent.
///
/// ```swift
/// let thumbnails = try coordinator.manager("thumbnails", store: CacheStore(directory: cachesURL))
/// thumbnails.register("2.0") { cache in
///     try cache.removeAll()              // the thumbnail format changed: rebuild lazily
/// }
/// ```
///
/// The levels live in a marker file inside the directory, `.store-migrations.json`, next to the
/// lock file `.store-migrations.lock`; the helpers never list, move or remove either. Deleting the
/// whole directory therefore forgets the levels with the contents, which for a cache is
/// consistent: an empty cache at no level. A missing directory is an empty store with no levels,
/// created on the first step. The store is rebuildable: the ``NewerStorePolicy/reset`` policy
/// empties it with ``rebuild(resetting:)``.
public final class CacheStore: MigrationStore {
    /// What a migration body works on.
    public typealias Content = CacheDirectory

    /// The name of the marker file holding the levels, inside the directory.
    static let markerName = ".store-migrations.json"
    /// The name of the lock file, inside the directory.
    static let lockName = ".store-migrations.lock"
    private static let levelsKey = "levels"

    /// The cache directory.
    public let directory: URL
    /// How long a step waits for another process to finish with the directory before throwing a
    /// ``FileStoreError`` with operation ``FileStoreError/Operation/waitForLock``.
    public let lockTimeout: Duration
    private let marker: AtomicFile
    private let lockURL: URL

    /// A store for the cache directory at `directory`, which need not exist yet.
    ///
    /// - Parameter lockTimeout: how long a step waits for another process migrating the same
    ///   directory.
    public convenience init(directory: URL, lockTimeout: Duration = .seconds(30)) {
        self.init(directory: directory, lockTimeout: lockTimeout, faults: .none)
    }

    init(directory: URL, lockTimeout: Duration, faults: AtomicFile.Faults) {
        self.directory = directory
        self.lockTimeout = lockTimeout
        self.lockURL = directory.appendingPathComponent(Self.lockName)
        self.marker = AtomicFile(
            url: directory.appendingPathComponent(Self.markerName),
            store: "cache directory \(directory.path)", faults: faults)
    }

    /// `"cache directory <path>"`, as errors and reports name the store.
    public var description: String { marker.store }

    /// Always `true`: a cache can be emptied and rebuilt by the app.
    public var isRebuildable: Bool { true }

    /// Whether `name`, at the top of the directory, is one of the store's own files: the marker,
    /// the lock, or a temporary marker left by a writer that died.
    static func isOwnFile(_ name: String) -> Bool {
        name == markerName || name == lockName || name.hasPrefix("." + markerName + ".")
    }

    /// The levels recorded in the marker file; none when it (or the directory) does not exist.
    ///
    /// - Throws: ``CacheStoreError/invalidMarker(file:reason:migration:)`` when the marker does
    ///   not parse, ``FileStoreError`` when it cannot be read.
    public func readStates() throws -> [String: ManagerState] {
        try readMarker(for: nil).levels.states
    }

    /// Under the lock: reads the marker again, returns
    /// ``StoreApplyOutcome/alreadyApplied(level:)`` if the manager is already at or past the
    /// migration, else runs the body on the directory and then records the level atomically.
    ///
    /// Not transactional: if the body throws, its changes stay and the level does not advance.
    /// Errors the body throws come out unchanged.
    public func apply(_ migration: StoreMigration<CacheDirectory>) throws -> StoreApplyOutcome {
        let reference = MigrationReference(manager: migration.manager, version: migration.version)
        return try locked(for: reference) {
            var contents = try readMarker(for: reference)
            var state = contents.levels.states[migration.manager] ?? ManagerState()
            if let level = state.level, level >= migration.version {
                return .alreadyApplied(level: level)
            }
            var cache = CacheDirectory(url: directory, store: description, migration: reference)
            try migration.run(on: &cache)
            state.level = migration.version
            contents.levels.set(state, of: migration.manager)
            try writeMarker(contents)
            return .applied
        }
    }

    /// Under the lock: reads the marker again and rewrites it with `manager`'s updated state.
    /// Writes nothing when `update` changes nothing.
    public func updateState(of manager: String, _ update: (inout ManagerState) -> Void) throws {
        try locked(for: nil) {
            var contents = try readMarker(for: nil)
            var state = contents.levels.states[manager] ?? ManagerState()
            update(&state)
            guard state != contents.levels.states[manager] ?? ManagerState() else { return }
            contents.levels.set(state, of: manager)
            try writeMarker(contents)
        }
    }

    /// Removes everything in the directory but the store's own files, then forgets `manager`'s
    /// state.
    ///
    /// Files go first: if the app dies in between, the level still says "newer" and the next
    /// launch resets again, rather than migrating leftovers of a newer app.
    public func rebuild(resetting manager: String) throws {
        try locked(for: nil) {
            var contents = try readMarker(for: nil)
            try CacheDirectory(url: directory, store: description, migration: nil).removeAll()
            guard contents.levels.states[manager] != nil else { return }
            contents.levels.remove(manager)
            try writeMarker(contents)
        }
    }

    /// The marker's contents: the levels, and any other keys a newer version wrote, kept as is.
    private struct MarkerContents {
        var levels: StoredLevels
        var otherValues: [String: PreferenceValue]
    }

    private func readMarker(for migration: MigrationReference?) throws -> MarkerContents {
        guard let data = try FileStoreError.attributing(to: migration, marker.contents) else {
            return MarkerContents(levels: StoredLevels(), otherValues: [:])
        }
        do {
            var values = try PreferencesJSON.decode(data)
            let levels = try StoredLevels(values.removeValue(forKey: Self.levelsKey))
            return MarkerContents(levels: levels, otherValues: values)
        } catch let error as PreferencesFormatError {
            throw CacheStoreError.invalidMarker(file: marker.url.path, reason: error.reason, migration: migration)
        } catch let error as StoredLevels.Invalid {
            let entry = error.manager.map { "the entry of manager \"\($0)\"" } ?? "\"\(Self.levelsKey)\""
            throw CacheStoreError.invalidMarker(
                file: marker.url.path, reason: "\(entry) \(error.reason)", migration: migration)
        }
    }

    private func writeMarker(_ contents: MarkerContents) throws {
        var values = contents.otherValues
        values[Self.levelsKey] = contents.levels.value
        // Versions and dictionaries of strings always encode.
        let data = try PreferencesJSON.encode(values)
        // A body may have deleted the directory itself rather than its contents.
        try createDirectory()
        try marker.replaceContents(with: data)
    }

    private func createDirectory() throws {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw FileStoreError.foundation(.createDirectory, path: directory.path, store: description, error: error)
        }
    }

    /// Runs `body` holding the store's lock, creating the directory first if needed.
    private func locked<T>(for migration: MigrationReference?, _ body: () throws -> T) throws -> T {
        try FileStoreError.attributing(to: migration) {
            try createDirectory()
            return try FileLock.withLock(url: lockURL, store: description, timeout: lockTimeout) {
                marker.removeTemporaryLeftovers()
                return try body()
            }
        }
    }
}
