import Foundation

/// A store kept in one JSON or property-list file holding a dictionary: the app's preferences,
/// with every manager's record under one reserved key, ``levelsKey``.
///
/// ```swift
/// let store = PreferencesStore(url: appSupport.appendingPathComponent("settings.json"))
/// let settings = try coordinator.manager("settings", store: store)
/// settings.register("1.1") { prefs in
///     try prefs.renameKey("showHelp", to: "onboarding.showHelp")
/// }
/// ```
///
/// Keys are the keys the body wrote, as `UserDefaults.bool(forKey:)` reads them: the rename above
/// writes the top-level key `onboarding.showHelp`, dot included. A nested dictionary's value is
/// reached by a path spelled as one, `["onboarding", "showHelp"]` (see ``PreferenceKeyPath``). A
/// rename that finds no value moves nothing, and the step's line of the report notes it.
///
/// Each migration edits a copy of the file's contents; the new contents and the new record are
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
        /// A JSON object. Dates are written `{"$date": "<ISO 8601>"}`, to the millisecond (or
        /// finer when a date needs it to read back exactly), and data `{"$data": "<base64>"}`;
        /// `null` is kept; non-finite numbers cannot be stored.
        case json
        /// A property list: binary or XML are read, and a file is written back in the format it
        /// was read in; a new file is binary (as `UserDefaults` writes on Apple platforms). XML
        /// keeps dates to the whole second. Property lists cannot hold `null`.
        case propertyList

        var name: String {
            switch self {
            case .json: return "JSON"
            case .propertyList: return "property list"
            }
        }
    }

    /// The top-level key under which the file keeps the records of its managers:
    /// `{"StoreMigrations.levels": {"settings": {"level": "1.1", "applied": ["1.0", "1.1"], "appVersion": "2.0"}}}`.
    /// (The name predates records; releases before them read only `level`.)
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

    /// A store kept in the file at `url`, which need not exist yet (nor its folder).
    ///
    /// - Parameters:
    ///   - url: the preferences file.
    ///   - format: how the file is encoded; `.json` unless it is a property list.
    ///   - lockTimeout: how long a step waits for another process migrating the same file.
    public convenience init(url: URL, format: Format = .json, lockTimeout: Duration = .seconds(30)) {
        self.init(url: url, format: format, lockTimeout: lockTimeout, faults: .none)
    }

    init(url: URL, format: Format, lockTimeout: Duration, faults: AtomicFile.Faults) {
        self.url = url
        self.format = format
        self.lockTimeout = lockTimeout
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
        try load()?.preferences ?? Preferences()
    }

    /// The file itself: two store objects for one file are one store to the scheduler.
    public var identity: StoreIdentity { .file(url) }

    /// Whether the file exists; the first step creates it, and its folder, when it does not.
    public var exists: Bool { FileManager.default.fileExists(atPath: url.path) }

    /// The records kept in the file; none when it does not exist. Reads only: creates nothing,
    /// takes no lock (the file is only ever replaced whole).
    ///
    /// - Throws: ``PreferencesStoreError`` when the file or its records do not parse,
    ///   ``FileStoreError`` when it cannot be read. Never an empty result for a bad file.
    public func readRecords() throws -> [String: MigrationRecord] {
        try load().map { try $0.records() }?.records ?? [:]
    }

    /// Under the lock: reads the file again, hands `body` the records and a copy of the
    /// preferences, and writes both back in one atomic replacement when either changed; a
    /// transaction that changes neither writes nothing (no replacement, no `fsync`).
    ///
    /// A live file this process may not write (no write permission, or no write bit at all, as
    /// `chmod a-w` leaves it) is refused with a ``FileStoreError`` before `body` runs: the store
    /// never replaces a file its owner protected. A body that throws, an unreadable file or a
    /// failed write leave the file byte-for-byte as it was. Errors `body` throws come out
    /// unchanged. A wait for the lock file is reported to `request`.
    public func transaction<T>(
        _ request: TransactionRequest, _ body: (inout [String: MigrationRecord], inout Preferences) throws -> T
    ) throws -> T {
        try locked(request) {
            let snapshot = try load()
            var stored = try snapshot?.records() ?? RecordFileCodec()
            var records = stored.records
            var preferences = snapshot?.preferences ?? Preferences()
            if snapshot != nil { try file.checkReplaceable() }
            let result = try body(&records, &preferences)
            let recordsChanged = stored.update(to: records)
            if recordsChanged || preferences != (snapshot?.preferences ?? Preferences()) {
                try save(preferences, records: stored, as: snapshot?.propertyListFormat ?? .binary)
            }
            return result
        }
    }

    /// The file's contents, split into the app's preferences and the stored records.
    private struct Snapshot {
        let preferences: Preferences
        let storedRecords: PreferenceValue?
        let file: String
        /// For a property list, binary or XML: what it is written back as.
        let propertyListFormat: PropertyListSerialization.PropertyListFormat

        func records() throws -> RecordFileCodec {
            var object: Any?
            do throws(PreferencesPropertyList.NullValue) {
                if let storedRecords { object = try PreferencesPropertyList.object(from: storedRecords) }
            } catch {
                throw PreferencesStoreError.invalidLevels(
                    file: file, manager: nil, reason: "hold null at \"\(error.path)\"", migration: nil)
            }
            do {
                return try RecordFileCodec(object)
            } catch {
                throw PreferencesStoreError.invalidLevels(
                    file: file, manager: error.manager, reason: error.reason, migration: nil)
            }
        }
    }

    private func load() throws -> Snapshot? {
        guard let data = try file.contents() else { return nil }
        var values: [String: PreferenceValue]
        var propertyListFormat = PropertyListSerialization.PropertyListFormat.binary
        do {
            switch format {
            case .json: values = try PreferencesJSON.decode(data)
            case .propertyList: (values, propertyListFormat) = try PreferencesPropertyList.decodeKeepingFormat(data)
            }
        } catch let error as PreferencesFormatError {
            throw PreferencesStoreError.unreadableFile(
                file: url.path, format: format, reason: error.reason, migration: nil)
        }
        let records = values.removeValue(forKey: Self.levelsKey)
        return Snapshot(
            preferences: Preferences(values), storedRecords: records, file: url.path, propertyListFormat: propertyListFormat)
    }

    private func save(
        _ preferences: Preferences, records: RecordFileCodec, as propertyListFormat: PropertyListSerialization.PropertyListFormat
    ) throws {
        var values = preferences.values
        guard values[Self.levelsKey] == nil else {
            throw PreferencesStoreError.reservedKey(file: url.path, migration: nil)
        }
        do {
            values[Self.levelsKey] = try records.object.map(PreferencesPropertyList.value(from:))
        } catch {
            throw PreferencesStoreError.invalidLevels(file: url.path, manager: nil, reason: "\(error)", migration: nil)
        }
        let data: Data
        do {
            switch format {
            case .json: data = try PreferencesJSON.encode(values)
            case .propertyList: data = try PreferencesPropertyList.encode(values, format: propertyListFormat)
            }
        } catch let error as PreferencesPropertyList.NullValue {
            throw PreferencesStoreError.nullValue(file: url.path, key: error.path, migration: nil)
        } catch let error as PreferencesFormatError {
            throw PreferencesStoreError.unencodableValue(
                file: url.path, format: format, reason: error.reason, migration: nil)
        }
        try file.replaceContents(with: data)
    }

    /// Runs `body` holding the store's lock, creating the file's folder first if needed: running
    /// creates what it needs, planning (``readRecords()``) never does.
    private func locked<T>(_ request: TransactionRequest, _ body: () throws -> T) throws -> T {
        // Named after the file a link points to, so that every path to the file takes one lock.
        let target = file.target
        let lockURL = target.deletingLastPathComponent().appendingPathComponent(target.lastPathComponent + ".lock")
        return try FileLock.withStoreLock(url: lockURL, store: description, timeout: lockTimeout, guarding: file, waiting: request, body)
    }
}

extension PreferencesStore: ErasableStore {
    /// Empties the preferences and forgets every record in one transaction: one atomic write, so
    /// a crash leaves the store as it was or erased.
    public func erase(_ request: TransactionRequest) throws {
        try transaction(request) { records, preferences in
            records = [:]
            preferences = Preferences()
        }
    }
}
