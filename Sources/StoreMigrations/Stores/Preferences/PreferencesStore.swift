import Foundation

/// A store kept in one JSON or property-list file holding a dictionary: the app's preferences,
/// with every manager's level under one reserved key, ``levelsKey``.
///
/// ```swift
/// let store = PreferencesStore(url: appSupport.appendingPathComponent("settings.json"))
/// let settings = try coordinator.manager("settings", store: store)
/// settings.register("1.1") { prefs in
///     try prefs.renameKey("showHelp", to: "onboarding.showHelp")
/// }
/// ```
///
/// Each migration edits a copy of the file's contents; the new contents and the new level are
/// written together by one atomic file replacement, so a crash leaves the old file or the new
/// one, and a body that throws leaves the file untouched. Around each step the store takes an
/// exclusive lock on a lock file beside it (`settings.json.lock`, never deleted) and reads the
/// file again, so several processes never migrate it at once and a step another process applied
/// is skipped.
///
/// Migration bodies never see ``levelsKey``. An app that writes the file by other means must keep
/// that key as it is: without it, the store starts over as on a first launch. A missing file is
/// an empty store; a file that cannot be read or parsed is an error and is left as it is.
public final class PreferencesStore: MigrationStore {
    /// What a migration body edits.
    public typealias Content = Preferences

    /// How the file is encoded.
    public enum Format: Sendable, Hashable {
        /// A JSON object. Dates are written `{"$date": "<ISO 8601>"}`, to the millisecond, and
        /// data `{"$data": "<base64>"}`; `null` and non-finite numbers cannot be stored.
        case json
        /// A property list: binary or XML are read, binary is written (as `UserDefaults` does).
        case propertyList

        var name: String {
            switch self {
            case .json: return "JSON"
            case .propertyList: return "property list"
            }
        }
    }

    /// The top-level key under which the file keeps the levels of its managers:
    /// `{"StoreMigrations.levels": {"settings": {"level": "1.1", "appVersion": "2.0"}}}`.
    ///
    /// Its dot is part of the key, so no dotted ``PreferenceKeyPath`` reaches it by accident.
    public static let levelsKey = "StoreMigrations.levels"

    /// The preferences file.
    public let url: URL
    /// How the file is encoded.
    public let format: Format
    /// How long a step waits for another process to finish with the store before throwing a
    /// ``FileStoreError`` with operation ``FileStoreError/Operation/waitForLock``.
    public let lockTimeout: Duration
    private let file: AtomicFile
    private let lockURL: URL

    /// A store kept in the file at `url`, which need not exist yet (nor its folder).
    ///
    /// - Parameters:
    ///   - format: how the file is encoded; `.json` unless it is a property list.
    ///   - lockTimeout: how long a step waits for another process migrating the same file.
    public convenience init(url: URL, format: Format = .json, lockTimeout: Duration = .seconds(30)) {
        self.init(url: url, format: format, lockTimeout: lockTimeout, faults: .none)
    }

    init(url: URL, format: Format, lockTimeout: Duration, faults: AtomicFile.Faults) {
        self.url = url
        self.format = format
        self.lockTimeout = lockTimeout
        self.lockURL = url.deletingLastPathComponent().appendingPathComponent(url.lastPathComponent + ".lock")
        self.file = AtomicFile(url: url, store: "preferences file \(url.path)", faults: faults)
    }

    /// `"preferences file <path>"`, as errors and reports name the store.
    public var description: String { file.store }

    /// The app's preferences as the file holds them now, without ``levelsKey``; empty when the
    /// file does not exist.
    ///
    /// Needs no lock: the file is only ever replaced whole, so a read sees it before or after any
    /// migration, never half-way.
    ///
    /// - Throws: ``PreferencesStoreError`` or ``FileStoreError`` when the file cannot be read.
    public func read() throws -> Preferences {
        try load(for: nil)?.preferences ?? Preferences()
    }

    /// The levels recorded in the file; none when it does not exist.
    ///
    /// - Throws: ``PreferencesStoreError`` when the file or its levels do not parse,
    ///   ``FileStoreError`` when it cannot be read. Never an empty result for a bad file.
    public func readStates() throws -> [String: ManagerState] {
        try load(for: nil).map { try $0.levels(for: nil) }?.states ?? [:]
    }

    /// Under the lock: reads the file again, returns
    /// ``StoreApplyOutcome/alreadyApplied(level:)`` if the manager is already at or past the
    /// migration, else runs the body on a copy of the preferences and writes them with the new
    /// level in one atomic replacement.
    ///
    /// A body that throws, an unreadable file or a failed write leave the file byte-for-byte as
    /// it was. Errors the body throws come out unchanged.
    public func apply(_ migration: StoreMigration<Preferences>) throws -> StoreApplyOutcome {
        let reference = MigrationReference(manager: migration.manager, version: migration.version)
        return try locked(for: reference) {
            let snapshot = try load(for: reference)
            var levels = try snapshot?.levels(for: reference) ?? StoredLevels()
            var state = levels.states[migration.manager] ?? ManagerState()
            if let level = state.level, level >= migration.version {
                return .alreadyApplied(level: level)
            }
            var preferences = snapshot?.preferences ?? Preferences()
            try migration.run(on: &preferences)
            state.level = migration.version
            levels.set(state, of: migration.manager)
            try save(preferences, levels: levels, for: reference)
            return .applied
        }
    }

    /// Under the lock: reads the file again and rewrites it with `manager`'s updated state, the
    /// app's preferences untouched. Writes nothing when `update` changes nothing.
    public func updateState(of manager: String, _ update: (inout ManagerState) -> Void) throws {
        try locked(for: nil) {
            let snapshot = try load(for: nil)
            var levels = try snapshot?.levels(for: nil) ?? StoredLevels()
            var state = levels.states[manager] ?? ManagerState()
            update(&state)
            guard state != levels.states[manager] ?? ManagerState() else { return }
            levels.set(state, of: manager)
            try save(snapshot?.preferences ?? Preferences(), levels: levels, for: nil)
        }
    }

    /// The file's contents, split into the app's preferences and the stored levels.
    private struct Snapshot {
        let preferences: Preferences
        let storedLevels: PreferenceValue?
        let file: String

        func levels(for migration: MigrationReference?) throws -> StoredLevels {
            do {
                return try StoredLevels(storedLevels)
            } catch {
                throw PreferencesStoreError.invalidLevels(
                    file: file, manager: error.manager, reason: error.reason, migration: migration)
            }
        }
    }

    private func load(for migration: MigrationReference?) throws -> Snapshot? {
        guard let data = try FileStoreError.attributing(to: migration, file.contents) else { return nil }
        var values: [String: PreferenceValue]
        do {
            switch format {
            case .json: values = try PreferencesJSON.decode(data)
            case .propertyList: values = try PreferencesPropertyList.decode(data)
            }
        } catch let error as PreferencesFormatError {
            throw PreferencesStoreError.unreadableFile(
                file: url.path, format: format, reason: error.reason, migration: migration)
        }
        let levels = values.removeValue(forKey: Self.levelsKey)
        return Snapshot(preferences: Preferences(values), storedLevels: levels, file: url.path)
    }

    private func save(_ preferences: Preferences, levels: StoredLevels, for migration: MigrationReference?) throws {
        var values = preferences.values
        guard values[Self.levelsKey] == nil else {
            throw PreferencesStoreError.reservedKey(file: url.path, migration: migration)
        }
        values[Self.levelsKey] = levels.value
        let data: Data
        do {
            switch format {
            case .json: data = try PreferencesJSON.encode(values)
            case .propertyList: data = try PreferencesPropertyList.encode(values)
            }
        } catch let error as PreferencesFormatError {
            throw PreferencesStoreError.unencodableValue(
                file: url.path, format: format, reason: error.reason, migration: migration)
        }
        try FileStoreError.attributing(to: migration) { try file.replaceContents(with: data) }
    }

    /// Runs `body` holding the store's lock, creating the file's folder first if needed.
    private func locked<T>(for migration: MigrationReference?, _ body: () throws -> T) throws -> T {
        try FileStoreError.attributing(to: migration) {
            let folder = url.deletingLastPathComponent()
            do {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            } catch {
                throw FileStoreError.foundation(.createDirectory, path: folder.path, store: description, error: error)
            }
            return try FileLock.withLock(url: lockURL, store: description, timeout: lockTimeout) {
                file.removeTemporaryLeftovers()
                return try body()
            }
        }
    }
}
