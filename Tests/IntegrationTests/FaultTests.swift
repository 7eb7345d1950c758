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

#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif

/// Bad disks, bad files and busy databases, met through `coordinator.run()` as an app meets
/// them: each is a typed error naming the store and the file, and the store's bytes stay as
/// they were.
@Suite(.serialized) struct FaultTests {
    let folder: TemporaryFolder
    let stores: ThreeStores

    init() throws {
        folder = try TemporaryFolder()
        stores = ThreeStores(root: folder.url)
        // Version 1.0 everywhere, so every file and lock file exists before the fault.
        try stores.migrate(to: "1.0")
    }

    /// The failure of step `step` in the run error `error`.
    func failure(of step: String, in error: MigrationRunError?) throws -> any Error {
        let report = try #require(error?.report)
        let failed = try #require(report.steps.first { $0.step.id.description == step }, "\(report)")
        guard case .failed = failed.outcome else {
            Issue.record("\(step) did not fail: \(report)")
            throw ProcessTestFailure("\(step) did not fail")
        }
        return try #require(failed.error)
    }

    func levels() throws -> [String] { try ThreeStoreLevels(stores).all }

    func bytes(of prefix: String) throws -> [String: Data] {
        try stores.bytes().filter { $0.key.hasPrefix(prefix) }
    }

    // MARK: Writes that fail part-way

    @Test func aPreferencesWriteFailingPartWayLeavesTheFileAsItWas() throws {
        let before = try bytes(of: "prefs/")
        let store = PreferencesStore(
            url: stores.preferencesURL, format: .json, lockTimeout: .seconds(5),
            faults: .failing(.write, errorNumber: ENOSPC))
        let error = #expect(throws: MigrationRunError.self) { try stores.coordinator("1.1", preferences: store).run() }
        let fault = try #require(try failure(of: "prefs@1.1", in: error) as? FileStoreError)
        #expect(fault.operation == .write)
        #expect(fault.code == ENOSPC)
        #expect(fault.store == "preferences file \(stores.preferencesURL.path)")
        #expect(fault.path.hasPrefix(stores.preferencesURL.deletingLastPathComponent().path + "/.settings.json."))
        #expect(fault.migration == MigrationReference(manager: "prefs", version: "1.1"))
        #expect(fault.description.contains("The store's file was left as it was"))
        #expect(try bytes(of: "prefs/") == before)
        // The other stores are independent and went on.
        #expect(try levels() == ["1.0", "1.1", "1.1"])
    }

    @Test func aCacheMarkerWriteFailingPartWayKeepsTheOldMarker() throws {
        let marker = stores.cacheURL.appendingPathComponent(CacheStore.markerName)
        let before = try Data(contentsOf: marker)
        let store = CacheStore(directory: stores.cacheURL, lockTimeout: .seconds(5), faults: .failing(.write, errorNumber: EIO))
        let error = #expect(throws: MigrationRunError.self) { try stores.coordinator("1.1", cache: store).run() }
        let fault = try #require(try failure(of: "thumbnails@1.1", in: error) as? FileStoreError)
        #expect(fault.operation == .write)
        #expect(fault.code == EIO)
        #expect(fault.store == "cache directory \(stores.cacheURL.path)")
        #expect(fault.path.hasPrefix(stores.cacheURL.path + "/." + CacheStore.markerName + "."))
        #expect(try Data(contentsOf: marker) == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: stores.cacheURL.path).sorted()
            == [".store-migrations.json", "1.0.txt"])
        #expect(try levels() == ["1.1", "1.1", "1.0"])
    }

    // MARK: A full disk

    /// Three stores on a small file system of their own, at version 1.0, with the disk then
    /// filled. The tests that call it run only where ``ScratchMount/isAvailable``.
    func fullDisk(openDatabase: Bool) throws -> (ScratchMount, ThreeStores, SQLiteStore?) {
        let mount = try ScratchMount.make(size: 512 * 1024).get()
        var stores = ThreeStores(root: mount.url)
        try stores.migrate(to: "1.0")
        // An app that has its database open keeps its write-ahead log and index files.
        let database = openDatabase ? SQLiteStore(url: stores.databaseURL) : nil
        try database?.write { _ in }
        let filler = mount.url.appendingPathComponent("filler")
        try Data().write(to: filler)
        let handle = try FileHandle(forWritingTo: filler)
        let chunk = Data(count: 4_096)
        while (try? handle.write(contentsOf: chunk)) != nil {}
        try handle.close()
        // Every 1.1 migration asks for more than the whole disk.
        stores.growth = 600 * 1024
        return (mount, stores, database)
    }

    @Test(.needsScratchMount)
    func aFullDiskFailsEachStoreWithATypedErrorAndChangesNoByte() throws {
        let (mount, stores, database) = try fullDisk(openDatabase: true)
        let before = try stores.bytes()

        let error = #expect(throws: MigrationRunError.self) { try stores.coordinator("1.1", database: database).run() }
        let preferences = try #require(try failure(of: "prefs@1.1", in: error) as? FileStoreError)
        #expect(preferences.code == ENOSPC, "\(preferences)")
        #expect(preferences.operation == .write)
        #expect(preferences.store == "preferences file \(stores.preferencesURL.path)")
        let library = try #require(try failure(of: "library@1.1", in: error) as? SQLiteError)
        #expect(library.code == SQLITE_FULL, "\(library)")
        #expect(library.path == stores.databaseURL.path)
        let cache = try #require(try failure(of: "thumbnails@1.1", in: error) as? FileStoreError)
        #expect(cache.code == ENOSPC, "\(cache)")
        #expect(cache.store == "cache directory \(stores.cacheURL.path)")

        // SQLite appends the failed transaction's frames to its write-ahead log until the disk
        // is full; with no commit frame after them, readers ignore them and the next write
        // overwrites them. Everything before them, and every other file, is as it was.
        var after = try stores.bytes()
        let log = "db/library.sqlite-wal"
        let logBefore = try #require(before[log])
        #expect(after[log]?.prefix(logBefore.count) == logBefore)
        after[log] = after[log]?.prefix(logBefore.count)
        #expect(after == before)
        #expect(try database?.read { db in
            try db.rows("SELECT label, length(payload) FROM entry").map(\.values)
        } == [[.text("written by 1.0"), .integer(10)]])
        #expect(try ThreeStoreLevels(stores).all == ["1.0", "1.0", "1.0"])
        withExtendedLifetime(mount) {}
    }

    @Test(.needsScratchMount)
    func aFullDiskStopsAClosedDatabaseFromOpeningAndNothingRuns() throws {
        let (mount, stores, _) = try fullDisk(openDatabase: false)
        let before = try stores.bytes()

        // Opening a database in WAL mode creates its log and index files: no room, no level.
        let error = try #require(#expect(throws: MigrationError.self) { try stores.coordinator("1.1").run() })
        guard case let .unreadableState(manager, store, reason) = error else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(manager == "library")
        #expect(store == "SQLite database \(stores.databaseURL.path)")
        #expect(reason.contains("in \(stores.databaseURL.path)"), "\(reason)")
        #expect(reason.contains("SQLITE_CANTOPEN") || reason.contains("SQLITE_FULL") || reason.contains("SQLITE_IOERR"), "\(reason)")
        // SQLite creates the log before it finds no room for the index, and leaves it empty: an
        // empty log holds nothing, and the next connection to open the database starts it over.
        var after = try stores.bytes()
        #expect(after.removeValue(forKey: "db/library.sqlite-wal") == Data())
        #expect(after == before)
        withExtendedLifetime(mount) {}
    }

    // MARK: A read-only folder

    @Test(.needsReadOnlyFolder, arguments: ["prefs", "cache"])
    func aReadOnlyFolderFailsItsFileStoreWithATypedErrorAndChangesNoByte(storeFolder: String) throws {
        let readOnly = folder.url.appendingPathComponent(storeFolder)
        try ScratchMount.makeReadOnly(readOnly)
        defer { ScratchMount.makeWritable(readOnly) }
        let before = try bytes(of: storeFolder + "/")

        let error = #expect(throws: MigrationRunError.self) { try stores.coordinator("1.1").run() }
        let step = storeFolder == "prefs" ? "prefs@1.1" : "thumbnails@1.1"
        let fault = try #require(try failure(of: step, in: error) as? FileStoreError)
        let store = storeFolder == "prefs"
            ? "preferences file \(stores.preferencesURL.path)" : "cache directory \(stores.cacheURL.path)"
        #expect(fault.store == store)
        #expect(fault.path.hasPrefix(readOnly.path + "/"))
        // Root ignores permissions, so it gets a read-only mount, refused when the preferences'
        // lock file (in the folder) is opened for writing, or when the cache's new marker is
        // created (its lock file is beside the directory, outside the mount); anyone else gets
        // a folder without write permission, refused when the new file is created.
        if geteuid() == 0 {
            #expect(fault.operation == (storeFolder == "prefs" ? .openLockFile : .createTemporaryFile))
            #expect(fault.code == EROFS)
        } else {
            #expect(fault.operation == .createTemporaryFile)
            #expect(fault.code == EACCES)
        }
        #expect(try bytes(of: storeFolder + "/") == before)
        #expect(try levels() == (storeFolder == "prefs" ? ["1.0", "1.1", "1.1"] : ["1.1", "1.1", "1.0"]))
    }

    @Test(.needsReadOnlyFolder)
    func aReadOnlyDatabaseFolderIsAnUnreadableLevelAndNothingRuns() throws {
        let readOnly = folder.url.appendingPathComponent("db")
        try ScratchMount.makeReadOnly(readOnly)
        defer { ScratchMount.makeWritable(readOnly) }
        let before = try stores.bytes()

        // Without the write-ahead log, not even the level can be read.
        let error = try #require(#expect(throws: MigrationError.self) { try stores.coordinator("1.1").run() })
        guard case let .unreadableState(manager, store, reason) = error else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(manager == "library")
        #expect(store == "SQLite database \(stores.databaseURL.path)")
        // A read-only mount (root) cannot even open the log; a folder without write permission
        // lets SQLite open the database read-only, and switching it to WAL then fails.
        let code = geteuid() == 0 ? "SQLITE_CANTOPEN (14)" : "SQLITE_READONLY (8)"
        #expect(reason.hasPrefix("SQLite error \(code)"), "\(reason)")
        #expect(reason.contains(" in \(stores.databaseURL.path) "), "\(reason)")
        #expect(try stores.bytes() == before)
    }

    // MARK: A busy database

    @Test func aDatabaseLockedPastTheBusyTimeoutFailsItsStepAndChangesNoByte() throws {
        let other = try Database(path: stores.databaseURL.path, busyTimeout: 5)
        try other.execute("BEGIN IMMEDIATE")
        defer { try? other.execute("ROLLBACK") }
        let before = try bytes(of: "db/")

        let database = SQLiteStore(url: stores.databaseURL, busyTimeout: 0.2)
        let error = #expect(throws: MigrationRunError.self) { try stores.coordinator("1.1", database: database).run() }
        let fault = try #require(try failure(of: "library@1.1", in: error) as? SQLiteError)
        #expect(fault.isBusy)
        #expect(fault.path == stores.databaseURL.path)
        #expect(fault.sql == "BEGIN IMMEDIATE")
        #expect(error?.description.contains("Migration library@1.1 on SQLite database \(stores.databaseURL.path) failed") == true)
        #expect(try bytes(of: "db/") == before)
        #expect(try levels() == ["1.1", "1.0", "1.1"])
    }

    // MARK: Files that do not parse: nothing runs anywhere

    /// Overwrites `path` with `damage(bytes)` and expects the next run to stop before anything
    /// runs, with an unreadable level of `manager` whose reason names `file`.
    func expectUnreadable(
        _ path: URL, manager: String, store: String, mentioning detail: String,
        damage: (Data) -> Data
    ) throws {
        try damage(try Data(contentsOf: path)).write(to: path)
        let before = try stores.bytes()
        let error = try #require(#expect(throws: MigrationError.self) { try stores.coordinator("1.1").run() })
        guard case let .unreadableState(unreadable, description, reason) = error else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(unreadable == manager)
        #expect(description == store)
        #expect(reason.contains(path.path), "\(reason)")
        #expect(reason.contains(detail), "\(reason)")
        #expect(try stores.bytes() == before)
    }

    @Test func aLevelMarkerWithGarbageStopsTheRunAndChangesNoByte() throws {
        let marker = stores.cacheURL.appendingPathComponent(CacheStore.markerName)
        try expectUnreadable(
            marker, manager: "thumbnails", store: "cache directory \(stores.cacheURL.path)",
            mentioning: "is not valid") { _ in Data("{\"levels\": {\"thumbnails\": {\"level\": \"1.x\"}}}".utf8) }
    }

    @Test func aPreferencesFileTruncatedInTheMiddleStopsTheRunAndChangesNoByte() throws {
        try expectUnreadable(
            stores.preferencesURL, manager: "prefs", store: "preferences file \(stores.preferencesURL.path)",
            mentioning: "is not a valid JSON dictionary") { $0.prefix($0.count / 2) }
    }

    @Test func aFileThatIsNotADatabaseStopsTheRunAndChangesNoByte() throws {
        // The first run's connection closed with it, removing its write-ahead log.
        try expectUnreadable(
            stores.databaseURL, manager: "library", store: "SQLite database \(stores.databaseURL.path)",
            mentioning: "SQLITE_NOTADB") { bytes in Data(bytes.indices.map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: stores.databaseURL.deletingLastPathComponent().path)
            == ["library.sqlite"])
    }
}

/// The levels of three stores, read back from disk.
struct ThreeStoreLevels {
    let all: [String]

    init(_ stores: ThreeStores) throws {
        all = [
            try PreferencesStore(url: stores.preferencesURL).states()["prefs"]?.level,
            try SQLiteStore(url: stores.databaseURL).states()["library"]?.level,
            try CacheStore(directory: stores.cacheURL).states()["thumbnails"]?.level,
        ].map { $0?.description ?? "none" }
    }
}
