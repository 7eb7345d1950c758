import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// Two store objects for one file are one store: the same ``StoreIdentity``, and the scheduler
/// never runs two of their steps at once.
@Suite struct StoreIdentityTests {
    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder()
    }

    /// `real/` and `link → real`.
    func makeLinkedFolder() throws -> (real: URL, link: URL) {
        let real = folder.file("real")
        let link = folder.file("link")
        try FileManager.default.createDirectory(at: real, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)
        return (real, link)
    }

    @Test func fileIdentityIsOneForEveryPathToOneFileAndDiffersBetweenFiles() throws {
        let (real, link) = try makeLinkedFolder()
        let a = real.appendingPathComponent("a.sqlite"), b = real.appendingPathComponent("b.sqlite")
        try Data("a".utf8).write(to: a)
        try Data("b".utf8).write(to: b)
        let fileLink = folder.file("a-link.sqlite")
        try FileManager.default.createSymbolicLink(at: fileLink, withDestinationURL: a)
        let hardLink = real.appendingPathComponent("a-hard.sqlite")
        #if canImport(Darwin)
        #expect(Darwin.link(a.path, hardLink.path) == 0)
        #else
        #expect(Glibc.link(a.path, hardLink.path) == 0)
        #endif

        let identity = StoreIdentity.file(a)
        #expect(identity.kind == "file")
        #expect(StoreIdentity.file(fileLink) == identity, "a symbolic link to the file")
        #expect(StoreIdentity.file(link.appendingPathComponent("a.sqlite")) == identity, "through a linked folder")
        #expect(StoreIdentity.file(hardLink) == identity, "a hard link")
        #expect(StoreIdentity.file(URL(fileURLWithPath: real.path + "/../real/./a.sqlite")) == identity)
        #expect(StoreIdentity.file(b) != identity)
        #expect(StoreIdentity.file(real) != identity)
        #expect(StoreIdentity.file(real) == StoreIdentity.file(link), "a folder and a link to it")

        // A file that does not exist yet: its path, with the links resolved.
        let missing = StoreIdentity.file(real.appendingPathComponent("new/missing.sqlite"))
        #expect(missing.kind == "path")
        #expect(StoreIdentity.file(link.appendingPathComponent("new/missing.sqlite")) == missing)
        #expect(StoreIdentity.file(real.appendingPathComponent("new/other.sqlite")) != missing)
        let realFolder = try #require(realpath(real.path, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        })
        #expect(missing.value == realFolder + "/new/missing.sqlite")
        #expect(StoreIdentity.file(URL(fileURLWithPath: "/store-migrations-missing-\(getpid())/a.sqlite")).value
            == "/store-migrations-missing-\(getpid())/a.sqlite", "missing from the root")

        // Two objects of one store type for one file, and two objects of an in-memory store.
        #expect(SQLiteStore(url: a).identity == SQLiteStore(url: fileLink).identity)
        #expect(PreferencesStore(url: a).identity == PreferencesStore(url: link.appendingPathComponent("a.sqlite")).identity)
        let one = InMemoryStore(0), another = InMemoryStore(0)
        #expect(one.identity != another.identity && one.identity == one.identity)
    }

    /// Managers "first" and "second", each on its own store object for one storage, and "other"
    /// on an independent store; every step of the shared storage takes a while. Returns the
    /// report and the meter: in-flight steps as the scheduler sees them (`shared`, `other`) and
    /// bodies of the shared storage (`body`).
    func runTwoManagersOnOneStorage<Store: MigrationStore>(
        _ first: Store, _ second: Store, _ body: @escaping @Sendable (inout Store.Content, String) throws -> Void
    ) throws -> (MigrationReport, InFlightMeter) {
        let meter = InFlightMeter()
        let coordinator = MigrationCoordinator(appVersion: "1.2")
        coordinator.maxConcurrentStores = 4
        coordinator.observer = meter.observer { $0 == "other" ? "other" : "shared" }
        let managers = [try coordinator.manager("first", store: first), try coordinator.manager("second", store: second)]
        for manager in managers {
            for version: Version in ["1.0", "1.1", "1.2"] {
                let entry = "\(manager.name)@\(version)"
                manager.register(version) { content in
                    meter.enter("body")
                    defer { meter.leave("body") }
                    Thread.sleep(forTimeInterval: 0.02)
                    try body(&content, entry)
                }
            }
        }
        let other = try coordinator.manager("other", store: InMemoryStore<[String]>([]))
        registerLogging(["1.0", "1.1", "1.2"], on: other)

        let plan = try coordinator.plan()
        #expect(plan.steps.count == 9)
        let report = try coordinator.run()
        return (report, meter)
    }

    @Test func twoSQLiteStoresForOneDatabaseAreScheduledAsOneStore() throws {
        let url = folder.file("library.sqlite")
        let first = SQLiteStore(url: url), second = SQLiteStore(url: url)
        #expect(first.identity == second.identity)
        let (report, meter) = try runTwoManagersOnOneStorage(first, second) { db, entry in
            try db.execute("CREATE TABLE IF NOT EXISTS entry(name TEXT NOT NULL)")
            try db.execute("INSERT INTO entry(name) VALUES (?)", arguments: [.text(entry)])
        }
        #expect(report.failures.isEmpty, "\(report)")
        #expect(report.steps.allSatisfy { $0.outcome == .applied })
        #expect(meter.maximum("shared") == 1, "two steps on one database ran at once")
        #expect(meter.maximum("body") == 1)
        let entries = try first.read { db in try db.rows("SELECT name FROM entry").map { try $0[0] as String } }
        #expect(entries.sorted() == ["first@1.0", "first@1.1", "first@1.2", "second@1.0", "second@1.1", "second@1.2"])
        for store in [first, second] {
            #expect(try store.readRecords().mapValues(\.level) == ["first": "1.2", "second": "1.2"])
        }
    }

    @Test func twoPreferencesStoresForOneFileOneThroughALinkedFolderAreScheduledAsOneStore() throws {
        let (real, link) = try makeLinkedFolder()
        let first = PreferencesStore(url: real.appendingPathComponent("settings.json"))
        let second = PreferencesStore(url: link.appendingPathComponent("settings.json"))
        #expect(first.identity == second.identity)
        let (report, meter) = try runTwoManagersOnOneStorage(first, second) { prefs, entry in
            try prefs.set(true, for: ["entries", entry])
        }
        #expect(report.failures.isEmpty, "\(report)")
        #expect(report.steps.allSatisfy { $0.outcome == .applied })
        #expect(meter.maximum("shared") == 1, "two steps on one file ran at once")
        #expect(meter.maximum("body") == 1)
        #expect(try first.read().dictionary("entries")?.keys.sorted()
            == ["first@1.0", "first@1.1", "first@1.2", "second@1.0", "second@1.1", "second@1.2"])
        #expect(try first.readRecords().mapValues(\.level) == ["first": "1.2", "second": "1.2"])
        // One file, the link still a link: nothing was written beside the real one.
        #expect(try folder.names() == ["link", "real"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: real.path).sorted() == ["settings.json", "settings.json.lock"])
    }

    /// A preferences file reached through a symbolic link to it, by one store object, and by its
    /// real path, by another: one identity, so one lock and one file. A step through the link
    /// must neither run while a step through the real path holds the lock, nor replace the link
    /// with a file of its own (the app, reading the real path, would miss the migration).
    @Test
    func aPreferencesFileReachedThroughALinkToItStaysOneFile() throws {
        let real = folder.file("settings.json"), link = folder.file("settings-link.json")
        try Data(#"{"kept": true}"#.utf8).write(to: real)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: real)
        let direct = PreferencesStore(url: real)
        let linked = PreferencesStore(url: link, lockTimeout: .milliseconds(100))
        #expect(direct.identity == linked.identity)

        try direct.transaction { _, _ in
            let error = #expect(throws: FileStoreError.self, "the linked store got in while the real one held the lock") {
                try linked.transaction { _, _ in }
            }
            #expect(error?.operation == .waitForLock)
        }

        let coordinator = MigrationCoordinator(appVersion: "1.0")
        try coordinator.manager("first", store: direct).register("1.0") { try $0.set(1, for: "first") }
        try coordinator.manager("second", store: linked).register("1.0") { try $0.set(2, for: "second") }
        #expect(try coordinator.run().succeeded)
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link.path)) == real.path, "the link is still a link")
        #expect(try direct.read().keys == ["first", "kept", "second"])
        #expect(try direct.readRecords().mapValues(\.level) == ["first": "1.0", "second": "1.0"])
        #expect(direct.identity == linked.identity)
    }

    /// The planner sees one store too: a reset of a cache directory that another manager uses
    /// through a second store object is refused as a reset of a shared store.
    @Test func aResetOfACacheDirectoryUsedThroughASecondStoreObjectIsRefused() throws {
        let (real, link) = try makeLinkedFolder()
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let thumbnails = try coordinator.manager("thumbnails", store: CacheStore(directory: real.appendingPathComponent("Cache")))
        thumbnails.newerStorePolicy = .reset
        _ = try coordinator.manager("downloads", store: CacheStore(directory: link.appendingPathComponent("Cache")))
        #expect(throws: MigrationError.resetOfSharedStore(
            manager: "thumbnails", store: thumbnails.store.description, otherManagers: ["downloads"])) {
            try coordinator.plan()
        }
    }
}
