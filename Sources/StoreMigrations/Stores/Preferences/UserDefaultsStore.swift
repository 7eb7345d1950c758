import Foundation

/// A store kept in a `UserDefaults` domain: the app's own defaults (`suiteName: nil`) or a suite,
/// with every manager's record under one reserved key, ``levelsKey``.
///
/// Migration bodies edit the same ``Preferences`` value a ``PreferencesStore`` gives them; the
/// store writes the edited values and the records back together, in one
/// `setPersistentDomain(_:forName:)` call, so the data and the level change together or not at
/// all.
///
/// ```swift
/// let store = UserDefaultsStore(suiteName: "group.com.example.notes")
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
/// ### Adopting a hand-rolled level
///
/// Apps that migrated their defaults by hand often kept their own level, such as an integer
/// `stateCompatibilityLevel`. Adopt it once as the manager's baseline: migrations at or below it
/// count as applied, later ones run. ``MigrationManager/baseline(at:)`` records nothing once the
/// manager has a level, so the call is safe at every launch:
///
/// ```swift
/// let store = UserDefaultsStore(suiteName: nil)
/// let settings = try coordinator.manager("settings", store: store)
/// if let legacy = try store.read().int("stateCompatibilityLevel") {
///     try settings.baseline(at: Version(legacy))     // level 3: only migrations after 3 run
/// }
/// ```
///
/// Or decide while planning, without writing anything before the run:
///
/// ```swift
/// settings.firstLaunchPolicy = .decide { store in
///     try store.read().contains("stateCompatibilityLevel") ? .baseline : .runAll
/// }
/// ```
///
/// (`.baseline` records the app's version; ``MigrationManager/baseline(at:)`` records the
/// legacy level itself, so prefer it when the legacy level is behind the app.)
///
/// ### What holds, and what does not
///
/// - **Threads.** A lock per domain, shared by every `UserDefaultsStore` of the process, excludes
///   other threads' steps on the same domain: a step reads the domain, runs its body and writes
///   under it, so a step another thread applied meanwhile is seen and skipped. ``read()`` and
///   ``readRecords()`` take it too, so they never see a domain half-written by a step of this
///   process, nor a level that goes back.
/// - **Processes.** `UserDefaults` offers no lock across processes. An app and its extension
///   sharing an app-group suite can both run a step on it at once: both bodies may run, and the
///   last write wins, losing the other's data and record. Run migrations of a shared suite from
///   one process only (the app), or keep that data in a ``PreferencesStore`` file in the group
///   container, whose lock works across processes.
/// - **A crash between the body and the write.** Nothing is written: the body edits a copy, and
///   the data and the records reach `UserDefaults` in one call. The step runs again at the next
///   launch.
/// - **A crash during or after the write.** On Apple platforms the write is handed to the
///   preferences daemon as one domain; when it reaches the disk is the daemon's business, so a
///   power loss just after a step may lose that step's data and record, together. On Linux,
///   swift-corelibs-foundation writes the domain's property list (under `$XDG_CONFIG_HOME`, or
///   `~/.config`, as `<suite>.plist`) by truncating and rewriting the file in place, not by an
///   atomic rename: a kill during that write can leave a truncated file, which Foundation then
///   reads as an empty domain, records included. This store calls `synchronize()` after each
///   write on Linux so that a step counts only once it is on disk.
/// - **A damaged domain.** `UserDefaults` reads a property list it cannot parse as an empty
///   domain, without telling anyone. On Linux the store therefore parses the domain's file
///   itself before reading it: a file that exists but is empty, cut short or not a dictionary is
///   ``UserDefaultsStoreError/damagedDomain(suite:file:reason:migration:)`` before any body runs,
///   never a first launch. On Apple platforms the preferences daemon reads the file and hands
///   over no error, so a damaged domain still reads as empty there. Records that parse but are
///   malformed are a ``UserDefaultsStoreError`` everywhere.
/// - **Dates.** Linux's Foundation stores XML property lists, which keep dates to the whole
///   second; Apple platforms keep full precision.
public final class UserDefaultsStore: MigrationStore {
    /// What a migration body edits.
    public typealias Content = Preferences

    /// The key under which the domain keeps the records of its managers, as a
    /// ``PreferencesStore`` file does: ``PreferencesStore/levelsKey``.
    public static let levelsKey = PreferencesStore.levelsKey

    /// The suite the store was created with; `nil` for the app's own (standard) defaults.
    public let suiteName: String?
    /// The name of the persistent domain the store reads and writes: the suite's name, or for the
    /// standard defaults the app's bundle identifier (the process name where there is none, as
    /// for a command-line tool or on Linux).
    public let domainName: String
    /// Excludes other threads of this process from the domain during a step, and reads from it.
    private let domainLock: UserDefaultsDomainLock

    /// A store kept in the defaults suite `suiteName`, or in the app's standard defaults when it
    /// is `nil`.
    ///
    /// Creates nothing: the domain is first written by a step or a baseline.
    public init(suiteName: String?) {
        self.suiteName = suiteName
        self.domainName = suiteName ?? Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName
        self.domainLock = UserDefaultsDomainLocks.shared.lock(for: domainName)
    }

    /// `"user defaults suite <name>"`, or `"standard user defaults (<domain>)"`, as errors and
    /// reports name the store.
    public var description: String {
        suiteName.map { "user defaults suite \($0)" } ?? "standard user defaults (\(domainName))"
    }

    /// The domain: two store objects for one suite are one store to the scheduler.
    public var identity: StoreIdentity { StoreIdentity(kind: "user-defaults", value: domainName) }

    /// The app's values as the domain holds them now, without ``levelsKey``; empty when the
    /// domain holds nothing.
    ///
    /// Takes the domain's lock, as a step does, so that it never reads the domain while a step
    /// of this process rewrites it (on Linux, Foundation rewrites its file in place): it sees the
    /// domain before or after each step. Inside a step's body, on its thread, it reads without
    /// waiting, as the step left the domain before its body.
    ///
    /// - Throws: ``UserDefaultsStoreError`` when the suite cannot be opened or holds a value
    ///   ``Preferences`` cannot.
    public func read() throws -> Preferences {
        try domainLock.withRead { try load().preferences }
    }

    /// The records kept in the domain; none when it holds none. Reads only: writes nothing, and
    /// waits for a step of this process on the domain to finish (see ``read()``).
    ///
    /// - Throws: ``UserDefaultsStoreError/invalidLevels(suite:manager:reason:migration:)`` when
    ///   the records are malformed: never an empty result for them.
    public func readRecords() throws -> [String: MigrationRecord] {
        try domainLock.withRead { try load().records().records }
    }

    /// Under the domain's lock: reads the domain, hands `body` the records and a copy of the
    /// values, and writes both back in one `setPersistentDomain(_:forName:)` when either
    /// changed; a transaction that changes neither writes nothing. A body that throws writes
    /// nothing; its error comes out unchanged.
    public func transaction<T>(
        _ request: TransactionRequest, _ body: (inout [String: MigrationRecord], inout Preferences) throws -> T
    ) throws -> T {
        try domainLock.withStep {
            let snapshot = try load()
            var stored = try snapshot.records()
            var records = stored.records
            var preferences = snapshot.preferences
            let result = try body(&records, &preferences)
            let recordsChanged = stored.update(to: records)
            if recordsChanged || preferences != snapshot.preferences {
                try save(preferences, records: stored, replacing: snapshot.domain)
            }
            return result
        }
    }

    /// The domain as read, split into the app's values and the stored records.
    private struct Snapshot {
        let domain: [String: Any]
        let preferences: Preferences
        let storedRecords: Any?
        let domainName: String

        func records() throws -> RecordFileCodec {
            do {
                return try RecordFileCodec(storedRecords)
            } catch {
                throw UserDefaultsStoreError.invalidLevels(
                    suite: domainName, manager: error.manager, reason: error.reason, migration: nil)
            }
        }
    }

    private func defaults() throws -> UserDefaults {
        guard let suiteName else { return .standard }
        guard let defaults = UserDefaults(suiteName: suiteName) else {
            throw UserDefaultsStoreError.unavailableSuite(suite: suiteName, migration: nil)
        }
        return defaults
    }

    private func load() throws -> Snapshot {
        #if !canImport(Darwin)
        try checkDomainFileParses()
        #endif
        let raw = try defaults().persistentDomain(forName: domainName) ?? [:]
        var domain: [String: Any] = [:]
        var values: [String: PreferenceValue] = [:]
        var storedRecords: Any?
        for (key, element) in raw {
            // Linux's Foundation hands values back wrapped in `Optional<Any>`.
            guard let object = PreferencesPropertyList.unwrapped(element) else { continue }
            domain[key] = object
            if key == Self.levelsKey {
                storedRecords = object
                continue
            }
            do {
                values[key] = try PreferencesPropertyList.value(from: object, at: [key])
            } catch let error as PreferencesFormatError {
                throw UserDefaultsStoreError.unsupportedValue(
                    suite: domainName, key: PreferenceKeyPath([key]), reason: error.reason, migration: nil)
            }
        }
        return Snapshot(domain: domain, preferences: Preferences(values), storedRecords: storedRecords, domainName: domainName)
    }

    #if !canImport(Darwin)
    /// Where swift-corelibs-foundation keeps the domain: beside an absolute suite path, else in
    /// the XDG config home (`$XDG_CONFIG_HOME` when it is absolute, otherwise `~/.config`).
    var domainFile: URL {
        if domainName.hasPrefix("/") { return URL(fileURLWithPath: domainName + ".plist") }
        let environment = ProcessInfo.processInfo.environment
        let configHome = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? URL(fileURLWithPath: $0) : nil }
            ?? URL(fileURLWithPath: environment["HOME"] ?? NSHomeDirectory()).appendingPathComponent(".config")
        return configHome.appendingPathComponent(domainName + ".plist")
    }

    /// Foundation reads a file it cannot parse as an empty domain, records included, which would
    /// run every migration again on empty defaults; a missing file is a domain never written.
    private func checkDomainFileParses() throws {
        let file = domainFile
        guard FileManager.default.fileExists(atPath: file.path) else { return }
        func damaged(_ reason: String) -> UserDefaultsStoreError {
            .damagedDomain(suite: domainName, file: file.path, reason: reason, migration: nil)
        }
        guard let data = try? Data(contentsOf: file) else { throw damaged("cannot be read") }
        // Foundation removes the file when the domain becomes empty, so an empty file is a write
        // cut short, not an empty domain.
        guard !data.isEmpty else { throw damaged("is empty") }
        guard let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) else {
            throw damaged("is not a property list")
        }
        guard plist is [String: Any] else { throw damaged("holds no dictionary") }
    }
    #endif

    private func save(_ preferences: Preferences, records: RecordFileCodec, replacing old: [String: Any]) throws {
        guard preferences.values[Self.levelsKey] == nil else {
            throw UserDefaultsStoreError.reservedKey(suite: domainName, migration: nil)
        }
        var domain: [String: Any] = [:]
        for (key, value) in preferences.values {
            do throws(PreferencesPropertyList.NullValue) {
                domain[key] = try PreferencesPropertyList.object(from: value, at: [key])
            } catch {
                throw UserDefaultsStoreError.nullValue(suite: domainName, key: error.path, migration: nil)
            }
        }
        domain[Self.levelsKey] = records.object
        let defaults = try defaults()
        defaults.setPersistentDomain(domain, forName: domainName)
        #if !canImport(Darwin)
        // Linux's Foundation writes to disk only when asked: a step counts once it is there.
        guard defaults.synchronize() else {
            defaults.setPersistentDomain(old, forName: domainName)
            throw UserDefaultsStoreError.writeFailed(suite: domainName, migration: nil)
        }
        #endif
    }
}

extension UserDefaultsStore: ErasableStore {
    /// Empties the preferences and forgets every record in one transaction: one atomic write, so
    /// a crash leaves the store as it was or erased.
    public func erase(_ request: TransactionRequest) throws {
        try transaction(request) { records, preferences in
            records = [:]
            preferences = Preferences()
        }
    }
}
