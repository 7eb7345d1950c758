import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

/// `UserDefaultsStore` against the store contract the file stores pass, on real suites.
///
/// Isolation: Linux's Foundation reads `HOME` and `XDG_CONFIG_HOME` once, when the process
/// starts (a `setenv` before the first `UserDefaults` use does not move it), so the test process
/// cannot be pointed at a temporary home. Instead, each test names its suite by an absolute path
/// inside a fresh temporary folder: CFPreferences then keeps that suite in `<path>.plist`, through
/// the same domain code as a named suite, and nothing touches the user's `~/.config`. The one
/// test of a plain suite name (`namedSuitesLiveUnderTheConfigHome`) uses a unique name and removes
/// its domain, which deletes its file.
@Suite struct UserDefaultsStoreTests {
    let folder: TemporaryFolder
    let suite: String

    init() throws {
        folder = try TemporaryFolder()
        suite = folder.file("com.example.notes").path
    }

    func store() -> UserDefaultsStore { UserDefaultsStore(suiteName: suite) }

    /// The property list Foundation wrote for the suite, read from disk.
    func onDisk() throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: suite + ".plist"))
        return try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
    }

    func fileBytes() throws -> Data { try Data(contentsOf: URL(fileURLWithPath: suite + ".plist")) }

    /// Sets the suite's whole domain, as an app writing its defaults would, and flushes it.
    func seed(_ domain: [String: Any]) {
        let defaults = UserDefaults(suiteName: suite)!
        defaults.setPersistentDomain(domain, forName: suite)
        #if !canImport(Darwin)
        _ = defaults.synchronize()
        #endif
    }

    func coordinator(_ appVersion: Version, versions: [Version], ran: TestLog) throws -> (MigrationCoordinator, MigrationManager<UserDefaultsStore>) {
        let coordinator = MigrationCoordinator(appVersion: appVersion)
        let settings = try coordinator.manager("settings", store: store())
        for version in versions {
            settings.register(version) { prefs in
                ran.append("settings@\(version)")
                try prefs.set(version.description, for: ["history", version.description])
            }
        }
        return (coordinator, settings)
    }

    // MARK: Exactly once, data and records together

    @Test func aStepWritesDataAndRecordsInOneDomainOnDisk() throws {
        seed(["showHelp": true, "theme": "dark"])
        let outcome = try store().apply(storeMigration("settings", "1.1") { (prefs: inout Preferences) in
            try prefs.renameKey("showHelp", to: "onboarding.showHelp")
        })
        #expect(outcome.isApplied)
        let disk = try onDisk()
        // The key the migration wrote, as `UserDefaults` reads it: dots are part of a key.
        #expect(Set(disk.keys) == ["onboarding.showHelp", "theme", UserDefaultsStore.levelsKey])
        #expect(disk["onboarding.showHelp"] as? Bool == true)
        #expect(UserDefaults(suiteName: suite)?.bool(forKey: "onboarding.showHelp") == true)
        #expect(disk["theme"] as? String == "dark")
        let levels = try #require(disk[UserDefaultsStore.levelsKey] as? [String: Any])
        let entry = try #require(levels["settings"] as? [String: Any])
        #expect(entry["level"] as? String == "1.1")
        #expect(entry["applied"] as? [String] == ["1.1"])
        #expect(try store().read() == Preferences(["onboarding.showHelp": true, "theme": "dark"]))
        #expect(try store().states() == ["settings": LevelState(level: "1.1")])
    }

    @Test func eachMigrationRunsExactlyOnceAcrossLaunches() throws {
        let ran = TestLog()
        for _ in 0..<3 {
            let (coordinator, _) = try coordinator("2.0", versions: ["1.0", "1.1", "2.0"], ran: ran)
            try coordinator.run()
        }
        #expect(ran.entries == ["settings@1.0", "settings@1.1", "settings@2.0"])
        #expect(try store().states() == ["settings": LevelState(level: "2.0")])
        #expect(try onDisk()["history"] as? [String: String] == ["1.0": "1.0", "1.1": "1.1", "2.0": "2.0"])
    }

    @Test func oneStepRacedByManyThreadsAndStoreObjectsRunsOnce() throws {
        let runs = TestLog()
        let suite = self.suite
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            _ = try? UserDefaultsStore(suiteName: suite).apply(storeMigration("settings", "1") { (prefs: inout Preferences) in
                runs.append("run")
                Thread.sleep(forTimeInterval: 0.005)   // long enough for every thread to overlap without the lock
                try prefs.set(runs.entries.count, for: "runs")
            })
        }
        #expect(runs.entries == ["run"])
        #expect(try onDisk()["runs"] as? Int == 1)
    }

    @Test func concurrentManagersOnOneSuiteLoseNoUpdate() throws {
        let managers = (0..<6).map { "manager\($0)" }
        let suite = self.suite
        DispatchQueue.concurrentPerform(iterations: managers.count) { index in
            _ = try? UserDefaultsStore(suiteName: suite).apply(storeMigration(managers[index], "1") { (prefs: inout Preferences) in
                Thread.sleep(forTimeInterval: 0.005)   // without the lock, every read would precede every write
                try prefs.set(index, for: .key(managers[index]))
            })
        }
        #expect(try store().states() == Dictionary(uniqueKeysWithValues: managers.map { ($0, LevelState(level: "1")) }))
        #expect(try store().read().keys == managers)
    }

    @Test func twoStoreObjectsForOneSuiteAreOneStore() {
        #expect(store().identity == UserDefaultsStore(suiteName: suite).identity)
        #expect(store().identity != UserDefaultsStore(suiteName: suite + "-other").identity)
        #expect(store().description == "user defaults suite \(suite)")
    }

    @Test func aBodyThatThrowsWritesNothing() throws {
        seed(["keep": 1, UserDefaultsStore.levelsKey: ["settings": ["level": "1.0"]]])
        let before = try fileBytes()
        #expect(throws: SimulatedBodyFailure.self) {
            try store().apply(storeMigration("settings", "1.1") { (prefs: inout Preferences) in
                prefs.removeValue(for: "keep")
                try prefs.set("half-done", for: "new")
                throw SimulatedBodyFailure()
            })
        }
        #expect(try fileBytes() == before)
        #expect(try store().read() == Preferences(["keep": 1]))
        #expect(try store().states() == ["settings": LevelState(level: "1.0")])
    }

    @Test func theBodyNeverSeesTheReservedKeyAndCannotClobberIt() throws {
        seed(["theme": "dark", UserDefaultsStore.levelsKey: ["other": ["level": "3"]]])
        var seen: Preferences?
        try store().apply(storeMigration("settings", "1") { (prefs: inout Preferences) in seen = prefs })
        #expect(seen == Preferences(["theme": "dark"]))
        let before = try fileBytes()
        let error = #expect(throws: UserDefaultsStoreError.self) {
            try store().apply(storeMigration("settings", "2") { (prefs: inout Preferences) in
                try prefs.set([:] as PreferenceValue, for: [UserDefaultsStore.levelsKey])
            })
        }
        #expect(error == .reservedKey(suite: suite, migration: .migration(manager: "settings", version: "2")))
        #expect(try fileBytes() == before)
    }

    @Test func aNullIsATypedErrorNamingTheKeyAndNothingIsWritten() throws {
        seed(["keep": 1])
        let before = try fileBytes()
        let error = #expect(throws: UserDefaultsStoreError.self) {
            try store().apply(storeMigration("settings", "1") { (prefs: inout Preferences) in
                try prefs.set(["token": .null] as PreferenceValue, for: "auth")
            })
        }
        #expect(error == .nullValue(suite: suite, key: ["auth", "token"], migration: .migration(manager: "settings", version: "1")))
        #expect(error?.description.contains("\"auth.token\"") == true)
        #expect(error?.description.contains("settings@1") == true)
        #expect(try fileBytes() == before)
    }

    // MARK: Unreadable is not empty

    static func malformedRecords(_ index: Int) -> Any {
        [3, ["settings": "1.1"], ["settings": ["level": "1.x"]], ["settings": ["applied": [1]]]][index]
    }

    @Test(arguments: 0..<4)
    func malformedRecordsAreATypedErrorNeverAFirstLaunch(index: Int) throws {
        seed(["keep": 1, UserDefaultsStore.levelsKey: Self.malformedRecords(index)])
        let before = try fileBytes()
        let ran = TestLog()
        let (coordinator, _) = try coordinator("2.0", versions: ["1.0"], ran: ran)
        #expect(throws: UserDefaultsStoreError.self) { try store().readRecords() }
        let planned = #expect(throws: MigrationError.self) { try coordinator.plan() }
        guard case let .unreadableState(manager, store, reason)? = planned else {
            Issue.record("expected unreadableState, got \(String(describing: planned))")
            return
        }
        #expect(manager == "settings")
        #expect(store == "user defaults suite \(suite)")
        #expect(reason.contains(UserDefaultsStore.levelsKey))
        #expect(throws: MigrationError.self) { try coordinator.run() }
        #expect(ran.entries.isEmpty)
        #expect(try fileBytes() == before)
    }

    @Test func aStepOnMalformedRecordsNamesTheMigration() throws {
        seed([UserDefaultsStore.levelsKey: ["settings": ["level": 1]]])
        let error = #expect(throws: UserDefaultsStoreError.self) {
            try store().apply(storeMigration("settings", "1.1") { (_: inout Preferences) in })
        }
        guard case let .invalidLevels(suite, manager, _, migration)? = error else {
            Issue.record("expected invalidLevels, got \(String(describing: error))")
            return
        }
        #expect(suite == self.suite)
        #expect(manager == "settings")
        #expect(migration == .migration(manager: "settings", version: "1.1"))
    }

    #if !canImport(Darwin)
    /// Foundation reads a property list it cannot parse as an empty domain; a launch after a kill
    /// cut its in-place rewrite short must refuse instead of running every migration again.
    @Test(arguments: [
        ("cut short", "is not a property list"), ("empty", "is empty"), ("an array", "holds no dictionary"),
    ])
    func aDamagedDomainFileIsATypedErrorBeforeAnyBodyRuns(damage: String, reason: String) throws {
        seed(["keep": 1, UserDefaultsStore.levelsKey: ["settings": ["level": "1.0", "applied": ["1.0"]]]])
        let file = URL(fileURLWithPath: suite + ".plist")
        #expect(store().domainFile == file)
        let good = try fileBytes()
        let damaged: Data = switch damage {
        case "cut short": good.prefix(good.count / 2)
        case "empty": Data()
        default: try PropertyListSerialization.data(fromPropertyList: ["keep"], format: .xml, options: 0)
        }
        try damaged.write(to: file)
        let expected = UserDefaultsStoreError.damagedDomain(suite: suite, file: file.path, reason: reason, migration: nil)
        #expect(expected.description == "User defaults suite \(suite) is kept in \(file.path), which \(reason); "
            + "Foundation would read it as empty defaults. Nothing was migrated and the file was left as it is. "
            + "Restore the file from a backup; delete it only to start the suite over with empty defaults (its "
            + "migrations then run again).")
        #expect(throws: expected) { try store().readRecords() }
        #expect(throws: expected) { try store().read() }

        let ran = TestLog()
        let (coordinator, _) = try coordinator("2.0", versions: ["1.0", "1.1", "2.0"], ran: ran)
        let planned = MigrationError.unreadableState(manager: "settings", store: store().description, reason: expected.description)
        #expect(throws: planned) { try coordinator.plan() }
        #expect(throws: planned) { try coordinator.run() }
        #expect(throws: UserDefaultsStoreError.damagedDomain(
            suite: suite, file: file.path, reason: reason, migration: .migration(manager: "settings", version: "1.1"))) {
            try store().apply(storeMigration("settings", "1.1") { (_: inout Preferences) in ran.append("step") })
        }
        #expect(ran.entries.isEmpty)
        #expect(try fileBytes() == damaged)
    }

    @Test func aDomainNeverWrittenIsAFirstLaunch() throws {
        #expect(!FileManager.default.fileExists(atPath: store().domainFile.path))
        #expect(try store().readRecords().isEmpty)
        #expect(try store().read() == Preferences([:]))
    }
    #endif

    // MARK: Policies

    @Test func aNewerDomainIsRefusedIgnoredOrNotReset() throws {
        try store().updateRecord(of: "settings") { $0.setBaseline("3.0") }
        let before = try fileBytes()
        let ran = TestLog()
        var (coordinator, settings) = try coordinator("2.0", versions: ["1.0", "2.0"], ran: ran)
        #expect(throws: MigrationError.storeIsNewer(manager: "settings", store: store().description, level: "3.0", appVersion: "2.0")) {
            try coordinator.run()
        }
        (coordinator, settings) = try self.coordinator("2.0", versions: ["1.0", "2.0"], ran: ran)
        settings.newerStorePolicy = .ignore
        let report = try coordinator.run()
        #expect(report.steps.isEmpty)
        (coordinator, settings) = try self.coordinator("2.0", versions: ["1.0", "2.0"], ran: ran)
        settings.newerStorePolicy = .reset
        #expect(throws: MigrationError.resetNotSupported(manager: "settings", store: store().description)) {
            try coordinator.run()
        }
        #expect(ran.entries.isEmpty)
        #expect(try fileBytes() == before)
    }

    @Test func theAppVersionHookRunsOncePerVersionAndIsRecorded() throws {
        let hooks = TestLog()
        for appVersion: Version in ["2.0", "2.0", "2.1"] {
            let (coordinator, settings) = try coordinator(appVersion, versions: ["1.0"], ran: TestLog())
            settings.onAppVersionChange { previous, current in hooks.append("\(previous?.description ?? "none") → \(current)") }
            try coordinator.run()
        }
        #expect(hooks.entries == ["none → 2.0", "2.0 → 2.1"])
        let entry = (try onDisk()[UserDefaultsStore.levelsKey] as? [String: Any])?["settings"] as? [String: Any]
        #expect(entry?["appVersion"] as? String == "2.1")
    }

    @Test func lateMigrationsRunOrFailByPolicy() throws {
        let ran = TestLog()
        try coordinator("1.2", versions: ["1.0", "1.2"], ran: ran).0.run()
        var (coordinator, settings) = try coordinator("1.2", versions: ["1.0", "1.1", "1.2"], ran: ran)
        settings.lateMigrationPolicy = .fail
        #expect(throws: MigrationError.lateMigrations(manager: "settings", store: store().description, versions: ["1.1"], level: "1.2")) {
            try coordinator.run()
        }
        (coordinator, settings) = try self.coordinator("1.2", versions: ["1.0", "1.1", "1.2"], ran: ran)
        try coordinator.run()
        #expect(ran.entries == ["settings@1.0", "settings@1.2", "settings@1.1"])
        #expect(try settings.appliedMigrations() == ["1.0", "1.1", "1.2"])
    }

    // MARK: Adopting a hand-rolled level

    /// The README's recipe: an app whose defaults hold `stateCompatibilityLevel = 3` adopts it as
    /// the baseline and runs only the migrations after it.
    @Test func adoptsAHandRolledLevelWithBaselineAt() throws {
        seed(["stateCompatibilityLevel": 3, "theme": "dark"])
        let ran = TestLog()
        for _ in 0..<2 {
            let (coordinator, settings) = try coordinator("5", versions: ["2", "3", "4", "5"], ran: ran)
            let store = settings.store
            if let legacy = try store.read().int("stateCompatibilityLevel") {
                try settings.baseline(at: Version(legacy))
            }
            try coordinator.run()
        }
        #expect(ran.entries == ["settings@4", "settings@5"])
        let entry = (try onDisk()[UserDefaultsStore.levelsKey] as? [String: Any])?["settings"] as? [String: Any]
        #expect(entry?["baseline"] as? String == "3")
        #expect(entry?["applied"] as? [String] == ["4", "5"])
        #expect(try onDisk()["stateCompatibilityLevel"] as? Int == 3)
    }

    /// The same with a first-launch decision: a domain holding the legacy key was migrated by the
    /// app's own code up to the app's version; a domain without it runs everything.
    @Test(arguments: [true, false])
    func adoptsAHandRolledKeyWithADecision(legacy: Bool) throws {
        seed(legacy ? ["stateCompatibilityLevel": 3] : ["theme": "dark"])
        let ran = TestLog()
        let (coordinator, settings) = try coordinator("3", versions: ["2", "3"], ran: ran)
        settings.firstLaunchPolicy = .decide { store in
            try store.read().contains("stateCompatibilityLevel") ? .baseline : .runAll
        }
        #expect(try coordinator.plan().managers[0].firstLaunch == (legacy ? .baseline : .runAll))
        try coordinator.run()
        #expect(ran.entries == (legacy ? [] : ["settings@2", "settings@3"]))
        #expect(try store().states()["settings"]?.level == "3")
    }

    // MARK: Where Foundation keeps suites

    @Test func namedSuitesLiveUnderTheConfigHome() throws {
        let name = "StoreMigrationsTests.\(UUID().uuidString)"
        let environment = ProcessInfo.processInfo.environment
        #if canImport(Darwin)
        let file: URL? = nil
        #else
        let configHome = environment["XDG_CONFIG_HOME"].map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: environment["HOME"] ?? NSHomeDirectory()).appendingPathComponent(".config")
        let file: URL? = configHome.appendingPathComponent("\(name).plist")
        #endif
        let defaults = try #require(UserDefaults(suiteName: name))
        defer {
            defaults.removePersistentDomain(forName: name)
            _ = defaults.synchronize()
            if let file { #expect(!FileManager.default.fileExists(atPath: file.path)) }
        }
        let store = UserDefaultsStore(suiteName: name)
        #expect(store.domainName == name)
        #if !canImport(Darwin)
        #expect(store.domainFile == file)
        #endif
        try store.apply(storeMigration("settings", "1") { (prefs: inout Preferences) in try prefs.set("x", for: "y") })
        #expect(try UserDefaultsStore(suiteName: name).read() == Preferences(["y": "x"]))
        if let file {
            let plist = try PropertyListSerialization.propertyList(from: Data(contentsOf: file), format: nil) as? [String: Any]
            #expect(plist?["y"] as? String == "x")
            #expect(plist?[UserDefaultsStore.levelsKey] != nil)
        }
    }

    @Test func theStandardDefaultsAreTheAppsOwnDomain() {
        let store = UserDefaultsStore(suiteName: nil)
        let expected = Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName
        #expect(store.suiteName == nil)
        #expect(store.domainName == expected)
        #expect(store.description == "standard user defaults (\(expected))")
    }

    @Test func isNotRebuildable() throws {
        #expect(!store().isRebuildable)
        #expect(throws: MigrationError.self) { try store().rebuild(resetting: "settings") }
    }
}

/// What bodies and hooks did, in order, from any thread.
final class TestLog: @unchecked Sendable {
    // @unchecked: `lines` is only read and written with `lock` held.
    private let lock = NSLock()
    private var lines: [String] = []
    var entries: [String] { lock.withLock { lines } }
    func append(_ line: String) { lock.withLock { lines.append(line) } }
}
