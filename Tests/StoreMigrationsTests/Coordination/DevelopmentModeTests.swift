import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

/// Development mode: a store on which an applied migration was edited is erased and every
/// migration replayed; stores without an edit are untouched; a release build refuses; the plan
/// names the erase and erases nothing.
@Suite struct DevelopmentModeTests {
    typealias Store = InMemoryStore<[String]>

    /// A launch whose `library@1.0` is fingerprinted `text` and appends `"1.0 " + text`.
    private func launch(
        _ store: Store, fingerprint text: String, mode: DevelopmentMode = .eraseOnFingerprintChange, appVersion: Version = "1.1"
    ) throws -> (coordinator: MigrationCoordinator, library: MigrationManager<Store>) {
        let coordinator = MigrationCoordinator(appVersion: appVersion)
        coordinator.developmentMode = mode
        let library = try coordinator.manager("library", store: store)
        library.register("1.0", options: .named("create notes", fingerprint: text)) { log in log.append("1.0 " + text) }
        library.register("1.1") { log in log.append("1.1") }
        library.register("1.2") { log in log.append("1.2") }
        return (coordinator, library)
    }

    private func change(_ library: MigrationManager<Store>, from old: String, to new: String) -> FingerprintChange {
        FingerprintChange(
            migration: library.migration("1.0"), name: "create notes", recorded: MigrationFingerprint(of: old),
            current: MigrationFingerprint(of: new))
    }

    @Test func anEditedMigrationErasesItsStoreAndReplaysEveryMigration() throws {
        let store = Store(["fresh"], name: "library store")
        try launch(store, fingerprint: "v1").coordinator.run()
        #expect(store.contents == ["fresh", "1.0 v1", "1.1"])

        let (coordinator, library) = try launch(store, fingerprint: "v2")
        let plan = try coordinator.plan()
        #expect(plan.managers[0].developmentErase == [change(library, from: "v1", to: "v2")])
        #expect(plan.managers[0].pending == ["1.0", "1.1"])
        #expect(plan.description.contains("library (library store): level none, first launch (runAll), "
            + "store erased first (development mode), pending 1.0, 1.1"))
        #expect(store.contents == ["fresh", "1.0 v1", "1.1"], "planning erases nothing")

        let report = try coordinator.run()
        #expect(report.steps.map(\.description).count == 2)
        #expect(store.contents == ["fresh", "1.0 v2", "1.1"], "the old body's data is gone, the new one's there")
        #expect(try library.record().applied.map(\.fingerprint) == [MigrationFingerprint(of: "v2"), nil])
        #expect(try coordinator.plan().isUpToDate)
        #expect(try coordinator.plan().managers[0].developmentErase == nil)
    }

    /// The erased store held data, so the replay runs every migration even where a fresh store
    /// would be baselined.
    @Test func theReplayIgnoresABaselineFirstLaunchPolicy() throws {
        let store = Store([], name: "library store")
        try launch(store, fingerprint: "v1").coordinator.run()
        let (coordinator, library) = try launch(store, fingerprint: "v2")
        library.firstLaunchPolicy = .baseline
        try coordinator.run()
        #expect(store.contents == ["1.0 v2", "1.1"])
    }

    /// Nothing is left in an erased store to say it was erased: when the replay stops before the
    /// first migration commits, the next launch is a fresh install under the manager's policy.
    @Test func aReplayThatFailsAtOnceLeavesAFreshInstallToTheNextLaunch() throws {
        let store = Store([], name: "library store")
        try launch(store, fingerprint: "v1").coordinator.run()
        let (coordinator, library) = try launch(store, fingerprint: "v2")
        library.firstLaunchPolicy = .baseline
        library.register("0.9") { _ in throw CocoaError(.featureUnsupported) }
        #expect(throws: MigrationRunError.self) { try coordinator.run() }
        #expect(store.contents == [])
        #expect(try store.readRecords().isEmpty)

        let (next, nextLibrary) = try launch(store, fingerprint: "v2")
        nextLibrary.firstLaunchPolicy = .baseline
        #expect(try next.plan().managers[0].firstLaunch == .baseline)
        try next.run()
        #expect(store.contents == [], "a fresh install under .baseline replays nothing")
        #expect(try nextLibrary.record().baseline == "1.1")
    }

    @Test func nothingIsErasedWhenNoFingerprintChanged() throws {
        let store = Store([], name: "library store")
        try launch(store, fingerprint: "v1").coordinator.run()
        try store.transaction { _, log in log.append("user data") }
        let (coordinator, _) = try launch(store, fingerprint: "v1", appVersion: "1.2")
        #expect(try coordinator.plan().managers[0].developmentErase == nil)
        try coordinator.run()
        #expect(store.contents == ["1.0 v1", "1.1", "user data", "1.2"])
    }

    @Test func offLeavesTheEditToTheFingerprintPolicy() throws {
        let store = Store([], name: "library store")
        try launch(store, fingerprint: "v1").coordinator.run()
        let (coordinator, library) = try launch(store, fingerprint: "v2", mode: .off, appVersion: "1.2")
        let report = try coordinator.run()
        #expect(report.changedFingerprints == [change(library, from: "v1", to: "v2")])
        #expect(store.contents == ["1.0 v1", "1.1", "1.2"])
    }

    @Test func aReleaseBuildRefusesAndLeavesTheStoreAsItWas() throws {
        let store = Store([], name: "library store")
        try launch(store, fingerprint: "v1").coordinator.run()
        let recordBefore = try store.readRecords()
        let release = DevelopmentMode(erasesStores: true, allowsReleaseBuilds: false, isDebugBuild: false)
        let (coordinator, library) = try launch(store, fingerprint: "v2", mode: release, appVersion: "1.2")
        let expected = DevelopmentModeError.refusedInReleaseBuild(
            store: "library store", change: change(library, from: "v1", to: "v2"))
        #expect(try coordinator.plan().managers[0].developmentErase == nil, "a refused erase is not planned")
        #expect(throws: expected) { try coordinator.run() }
        #expect(store.contents == ["1.0 v1", "1.1"], "neither erased nor migrated")
        #expect(try store.readRecords() == recordBefore)
        #expect(expected.description == "Development mode would erase library store because "
            + "\(change(library, from: "v1", to: "v2")), but this is a release build. Nothing was erased or "
            + "migrated. Set developmentMode to .eraseOnFingerprintChange only in debug builds (#if DEBUG), or "
            + "restore the migration's text as it was applied.")

        let allowed = DevelopmentMode(erasesStores: true, allowsReleaseBuilds: true, isDebugBuild: false)
        try launch(store, fingerprint: "v2", mode: allowed, appVersion: "1.2").coordinator.run()
        #expect(store.contents == ["1.0 v2", "1.1", "1.2"])
    }

    @Test func theLoudFlagIsWhatAllowsReleaseBuilds() {
        #expect(DevelopmentMode.eraseOnFingerprintChange.allowsReleaseBuilds == false)
        #expect(DevelopmentMode.eraseOnFingerprintChange(dangerouslyAllowingReleaseBuilds: true).allowsReleaseBuilds)
        #expect(DevelopmentMode.off.erasesStores == false)
        #expect(MigrationCoordinator(appVersion: "1").developmentMode == .off)
    }

    @Test func aStoreThatCannotBeErasedIsRefused() throws {
        let inner = Store([], name: "shared store")
        let store = NotErasable(inner)
        func launch(_ text: String) throws -> (MigrationCoordinator, MigrationManager<NotErasable>) {
            let coordinator = MigrationCoordinator(appVersion: "1.0")
            coordinator.developmentMode = .eraseOnFingerprintChange
            let library = try coordinator.manager("library", store: store)
            library.register("1.0", options: .named("create notes", fingerprint: text)) { log in log.append(text) }
            return (coordinator, library)
        }
        try launch("v1").0.run()
        let (coordinator, library) = try launch("v2")
        let expected = DevelopmentModeError.eraseNotSupported(
            store: "shared store",
            change: FingerprintChange(
                migration: library.migration("1.0"), name: "create notes", recorded: MigrationFingerprint(of: "v1"),
                current: MigrationFingerprint(of: "v2")))
        #expect(throws: expected) { try coordinator.run() }
        #expect(inner.contents == ["v1"])
    }

    /// The dependant's store is not erased and its applied migration does not run again; the
    /// replay meets its dependency again, before the dependant's pending migration.
    @Test func aDependantOnAnErasedStoreIsNotErased() throws {
        let libraryStore = Store([], name: "library store")
        let settingsStore = Store([], name: "settings store")
        func launch(_ text: String, appVersion: Version) throws -> MigrationCoordinator {
            let coordinator = MigrationCoordinator(appVersion: appVersion)
            coordinator.developmentMode = .eraseOnFingerprintChange
            let library = try coordinator.manager("library", store: libraryStore)
            let settings = try coordinator.manager("settings", store: settingsStore)
            library.register("1.0", options: .named("create notes", fingerprint: text)) { log in log.append("1.0 " + text) }
            settings.register("1.0", dependsOn: [library.migration("1.0")]) { log in log.append("settings 1.0") }
            settings.register("1.1", dependsOn: [library.migration("1.0")]) { log in log.append("settings 1.1") }
            return coordinator
        }
        try launch("v1", appVersion: "1.0").run()
        try settingsStore.transaction { _, log in log.append("user data") }
        let coordinator = try launch("v2", appVersion: "1.1")
        let plan = try coordinator.plan()
        #expect(plan.managers.map { $0.developmentErase != nil } == [true, false])
        #expect(plan.steps.map(\.description) == ["library@1.0 (create notes)", "settings@1.1 after library@1.0"])
        try coordinator.run()
        #expect(libraryStore.contents == ["1.0 v2"])
        #expect(settingsStore.contents == ["settings 1.0", "user data", "settings 1.1"])
    }

    @Test func aPreferencesFileLosesTheOldDataAndGetsTheNew() throws {
        let scratch = try TemporaryFolder()
        let url = scratch.url.appendingPathComponent("settings.json")
        func launch(_ key: String) throws -> MigrationCoordinator {
            let coordinator = MigrationCoordinator(appVersion: "1.1")
            coordinator.developmentMode = .eraseOnFingerprintChange
            let settings = try coordinator.manager("settings", store: PreferencesStore(url: url))
            settings.register("1.0", options: .named("theme", fingerprint: key)) { prefs in try prefs.set("dark", for: PreferenceKeyPath([key])) }
            settings.register("1.1") { prefs in try prefs.set(1, for: "launches") }
            return coordinator
        }
        try launch("theme").run()
        try PreferencesStore(url: url).transaction { _, prefs in try prefs.set("kept until erased", for: "userKey") }
        #expect(try PreferencesStore(url: url).read().keys == ["launches", "theme", "userKey"])

        let coordinator = try launch("appearance")
        #expect(try coordinator.plan().managers[0].developmentErase?.count == 1)
        #expect(try PreferencesStore(url: url).read().keys == ["launches", "theme", "userKey"])
        try coordinator.run()
        #expect(try PreferencesStore(url: url).read().keys == ["appearance", "launches"])
        #expect(try PreferencesStore(url: url).readRecords()["settings"]?.applied.map(\.fingerprint)
            == [MigrationFingerprint(of: "appearance"), nil])
    }

    /// A suite named by an absolute path in a temporary folder, as `UserDefaultsStoreTests` do,
    /// keeps the test away from the user's defaults.
    @Test func aUserDefaultsSuiteLosesTheOldKeysAndGetsTheNew() throws {
        let scratch = try TemporaryFolder()
        let suite = scratch.file("com.example.notes").path
        func launch(_ key: String) throws -> MigrationCoordinator {
            let coordinator = MigrationCoordinator(appVersion: "1.0")
            coordinator.developmentMode = .eraseOnFingerprintChange
            let settings = try coordinator.manager("settings", store: UserDefaultsStore(suiteName: suite))
            settings.register("1.0", options: .named("theme", fingerprint: key)) { prefs in
                try prefs.set("dark", for: PreferenceKeyPath([key]))
            }
            return coordinator
        }
        try launch("theme").run()
        try launch("appearance").run()
        #expect(try UserDefaultsStore(suiteName: suite).read().keys == ["appearance"])
    }

    /// An erase that fails at the file's replacement, as a crash before the rename would, leaves
    /// the file byte for byte as it was: records and preferences together.
    @Test func aPreferencesEraseThatFailsLeavesTheFileAsItWas() throws {
        let scratch = try TemporaryFolder()
        let url = scratch.url.appendingPathComponent("settings.json")
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        let settings = try coordinator.manager("settings", store: PreferencesStore(url: url))
        settings.register("1.0") { prefs in try prefs.set("dark", for: "theme") }
        try coordinator.run()
        let before = try Data(contentsOf: url)
        let failing = PreferencesStore(url: url, format: .json, lockTimeout: .seconds(30), faults: .failing(.replace))
        #expect(throws: FileStoreError.self) { try failing.erase(TransactionRequest()) }
        #expect(try Data(contentsOf: url) == before)
        #expect(try settings.record().level == "1.0")
    }

    /// The cache's records go first: a marker that cannot be written leaves every file, with the
    /// records that account for them.
    @Test func aCacheEraseWhoseMarkerFailsRemovesNothing() throws {
        let scratch = try TemporaryFolder()
        let directory = scratch.url.appendingPathComponent("thumbnails")
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        let thumbs = try coordinator.manager("thumbnails", store: CacheStore(directory: directory))
        thumbs.register("1.0") { cache in try Data().write(to: cache.url.appendingPathComponent("small")) }
        try coordinator.run()
        let failing = CacheStore(directory: directory, lockTimeout: .seconds(30), faults: .failing(.replace))
        #expect(throws: FileStoreError.self) { try failing.erase(TransactionRequest()) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { !$0.hasPrefix(".") } == ["small"])
        #expect(try thumbs.record().level == "1.0")
    }

    @Test func aCacheDirectoryIsEmptiedRecordsFirst() throws {
        let scratch = try TemporaryFolder()
        let directory = scratch.url.appendingPathComponent("thumbnails")
        func launch(_ name: String) throws -> MigrationCoordinator {
            let coordinator = MigrationCoordinator(appVersion: "1.0")
            coordinator.developmentMode = .eraseOnFingerprintChange
            let thumbs = try coordinator.manager("thumbnails", store: CacheStore(directory: directory))
            thumbs.register("1.0", options: .named("layout", fingerprint: name)) { cache in
                try Data().write(to: cache.url.appendingPathComponent(name))
            }
            return coordinator
        }
        try launch("small").run()
        try launch("large").run()
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { !$0.hasPrefix(".") }
        #expect(files == ["large"])
    }
}

/// A store that forwards to an in-memory one but cannot be erased, as a PostgreSQL store.
private final class NotErasable: MigrationStore {
    let base: InMemoryStore<[String]>
    init(_ base: InMemoryStore<[String]>) { self.base = base }
    var description: String { base.description }
    func readRecords() throws -> [String: MigrationRecord] { try base.readRecords() }
    func transaction<T>(
        _ request: TransactionRequest, _ body: (inout [String: MigrationRecord], inout [String]) throws -> T
    ) throws -> T {
        try base.transaction(request, body)
    }
}
