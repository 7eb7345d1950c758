import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

@Suite struct CacheStoreTests {
    let folder: TemporaryFolder
    let directory: URL
    let markerURL: URL

    init() throws {
        folder = try TemporaryFolder()
        directory = folder.file("Thumbnails")
        markerURL = directory.appendingPathComponent(".store-migrations.json")
    }

    func store(lockTimeout: Duration = .seconds(5), faults: AtomicFile.Faults = .none) -> CacheStore {
        CacheStore(directory: directory, lockTimeout: lockTimeout, faults: faults)
    }

    /// Creates files (with their folders) holding their own path.
    func seed(_ paths: [String]) throws {
        for path in paths {
            let url = directory.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(path.utf8).write(to: url)
        }
    }

    func contents(_ path: String) throws -> String {
        String(decoding: try Data(contentsOf: directory.appendingPathComponent(path)), as: UTF8.self)
    }

    /// Everything in the directory, the store's own files included, as relative paths.
    func everything() throws -> [String] {
        guard let enumerator = FileManager.default.enumerator(atPath: directory.path) else { return [] }
        return (enumerator.allObjects as? [String] ?? []).sorted()
    }

    // MARK: Applying

    @Test func aMissingDirectoryIsAnEmptyStoreCreatedOnTheFirstStep() throws {
        #expect(try store().states() == [:])
        #expect(!FileManager.default.fileExists(atPath: directory.path))

        var listed: [String]?
        let outcome = try store().apply(storeMigration("thumbnails", "1.0") { (cache: inout CacheDirectory) in
            listed = try cache.files()
            try Data("new".utf8).write(to: cache.fileURL(for: "a.png"))
        })
        #expect(outcome.isApplied)
        #expect(listed == [])
        #expect(try everything() == [".store-migrations.json", "a.png"])
        let marker = try JSONSerialization.jsonObject(with: Data(contentsOf: markerURL)) as? NSDictionary
        #expect(marker == ["levels": ["thumbnails": ["level": "1.0", "applied": ["1.0"]]]] as NSDictionary)
    }

    @Test func aNewStoreObjectReadsTheSameLevelsBack() throws {
        _ = try store().apply(storeMigration("thumbnails", "1.0") { (_: inout CacheDirectory) in })
        _ = try store().apply(storeMigration("previews", "3") { (_: inout CacheDirectory) in })
        try store().updateRecord(of: "thumbnails") { $0.appVersion = "2.0" }
        #expect(try CacheStore(directory: directory).states() == [
            "thumbnails": LevelState(level: "1.0", appVersion: "2.0"), "previews": LevelState(level: "3"),
        ])
    }

    @Test func anAppliedLevelSkipsTheBody() throws {
        try store().updateRecord(of: "thumbnails") { $0.setBaseline("2.0") }
        let marker = try Data(contentsOf: markerURL)
        var ran = false
        let outcome = try store().apply(storeMigration("thumbnails", "1.5") { (_: inout CacheDirectory) in ran = true })
        #expect(outcome == .alreadyApplied(level: "2.0"))
        #expect(!ran)
        #expect(try Data(contentsOf: markerURL) == marker)
    }

    @Test func aBodyThatThrowsKeepsItsChangesButNotTheLevel() throws {
        try seed(["a.png", "b.png"])
        #expect(throws: SimulatedBodyFailure.self) {
            try store().apply(storeMigration("thumbnails", "1.0") { (cache: inout CacheDirectory) in
                try cache.removeItems { $0 == "a.png" }
                throw SimulatedBodyFailure()
            })
        }
        #expect(try store().states() == [:])
        #expect(!FileManager.default.fileExists(atPath: markerURL.path))
        #expect(try CacheDirectory(url: directory, store: "", migration: nil).files() == ["b.png"])

        // At least once: the step runs again, and an idempotent body finishes the job.
        let outcome = try store().apply(storeMigration("thumbnails", "1.0") { (cache: inout CacheDirectory) in
            try cache.removeItems { $0 == "a.png" }
        })
        #expect(outcome.isApplied)
    }

    @Test(arguments: [FileStoreError.Operation.createTemporaryFile, .write, .synchronize, .replace])
    func aFailedMarkerWriteKeepsTheOldMarkerAndLeavesNoTemporaryFile(operation: FileStoreError.Operation) throws {
        try store().updateRecord(of: "thumbnails") { $0.setBaseline("1") }
        let marker = try Data(contentsOf: markerURL)
        let error = #expect(throws: FileStoreError.self) {
            try store(faults: .failing(operation)).apply(storeMigration("thumbnails", "2") { (_: inout CacheDirectory) in })
        }
        #expect(error?.operation == operation)
        #expect(error?.migration == .migration(manager: "thumbnails", version: "2"))
        #expect(try Data(contentsOf: markerURL) == marker)
        #expect(try everything() == [".store-migrations.json"])
    }

    @Test func aBodyThatDeletesTheWholeDirectoryStillGetsItsLevel() throws {
        try seed(["a.png"])
        _ = try store().apply(storeMigration("thumbnails", "1") { (cache: inout CacheDirectory) in
            try FileManager.default.removeItem(at: cache.url)
        })
        #expect(try store().states() == ["thumbnails": LevelState(level: "1")])
    }

    // MARK: Markers

    @Test(arguments: [
        "", "garbage", "{\"levels\": ", "[]", #"{"levels": []}"#, #"{"levels": {"thumbnails": {"level": "x"}}}"#,
        #"{"levels": {"thumbnails": 2}}"#,
    ])
    func aGarbageMarkerIsATypedErrorAndStaysByteIdentical(text: String) throws {
        try seed(["a.png"])
        try Data(text.utf8).write(to: markerURL)
        var ran = false

        #expect(throws: CacheStoreError.self) { try store().readRecords() }
        let error = #expect(throws: CacheStoreError.self) {
            try store().apply(storeMigration("thumbnails", "1") { (_: inout CacheDirectory) in ran = true })
        }
        #expect(throws: CacheStoreError.self) { try store().updateRecord(of: "thumbnails") { $0.setBaseline("1") } }
        #expect(throws: CacheStoreError.self) { try store().rebuild(resetting: "thumbnails") }

        guard case let .invalidMarker(file, _, migration)? = error else {
            Issue.record("expected invalidMarker, got \(String(describing: error))")
            return
        }
        #expect(file == markerURL.path)
        #expect(migration == .migration(manager: "thumbnails", version: "1"))
        #expect(error?.description.contains("thumbnails@1") == true)
        #expect(!ran)
        #expect(try Data(contentsOf: markerURL) == Data(text.utf8))
        #expect(try contents("a.png") == "a.png")
    }

    @Test func aFileWhereTheDirectoryShouldBeIsAnErrorNotAnEmptyStore() throws {
        try Data("not a folder".utf8).write(to: directory)
        let read = #expect(throws: FileStoreError.self) { try store().readRecords() }
        #expect(read?.operation == .read)
        let applied = #expect(throws: FileStoreError.self) {
            try store().apply(storeMigration("thumbnails", "1") { (_: inout CacheDirectory) in })
        }
        #expect(applied?.operation == .read)
        #expect(applied?.migration == .migration(manager: "thumbnails", version: "1"))
    }

    @Test func unknownMarkerFieldsSurviveAnUpdate() throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(#"{"format": 2, "levels": {"thumbnails": {"level": "1", "note": "x"}}}"#.utf8).write(to: markerURL)
        _ = try store().apply(storeMigration("thumbnails", "2") { (_: inout CacheDirectory) in })
        #expect(try PreferencesJSON.decode(Data(contentsOf: markerURL)) == [
            "format": 2, "levels": ["thumbnails": ["level": "2", "baseline": "1", "applied": ["2"], "note": "x"]],
        ])
    }

    // MARK: Rebuild

    @Test func rebuildRemovesEverythingButTheMarkerAndForgetsOnlyThatManager() throws {
        try seed(["a.png", "sub/b.png", ".hidden"])
        try store().updateRecord(of: "thumbnails") { $0.setBaseline("9") }
        try store().updateRecord(of: "other") { $0.setBaseline("1") }

        let cache = store()
        #expect(cache.isRebuildable)
        try cache.rebuild(resetting: "thumbnails")

        #expect(try everything() == [".store-migrations.json"])
        #expect(try store().states() == ["other": LevelState(level: "1")])
    }

    @Test func rebuildOfAMissingDirectoryCreatesAnEmptyOne() throws {
        try store().rebuild(resetting: "thumbnails")
        #expect(try store().states() == [:])
        #expect(try everything() == [])
    }

    // MARK: Locking

    @Test func waitsForTheLockThenTimesOut() throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let lockPath = store().lockURL.path
        #expect(lockPath == directory.deletingLastPathComponent().appendingPathComponent("Thumbnails.store-migrations.lock").path)
        let holder = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        try #require(holder >= 0)
        try #require(flock(holder, LOCK_EX | LOCK_NB) == 0)
        var ran = false
        let error = #expect(throws: FileStoreError.self) {
            try store(lockTimeout: .milliseconds(20)).apply(storeMigration("thumbnails", "1") { (_: inout CacheDirectory) in ran = true })
        }
        #expect(error?.operation == .waitForLock)
        #expect(error?.path == lockPath)
        #expect(error?.description.contains("cache directory \(directory.path)") == true)
        #expect(!ran)
        #expect(throws: FileStoreError.self) { try store(lockTimeout: .zero).rebuild(resetting: "thumbnails") }
        close(holder)
        #expect(try store(lockTimeout: .zero).apply(storeMigration("thumbnails", "1") { (_: inout CacheDirectory) in ran = true }).isApplied)
        #expect(ran)
    }

    // MARK: Helpers

    func directoryHandle() throws -> CacheDirectory {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return CacheDirectory(url: directory, store: "cache directory \(directory.path)", migration: nil)
    }

    @Test func filesListsFilesRecursivelyWithoutTheStoresOwn() throws {
        try store().updateRecord(of: "thumbnails") { $0.setBaseline("1") }
        try seed(["b.png", "a/x.jpg", "a/deeper/y.jpg", ".hidden", "a/.store-migrations.json"])
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("empty"), withIntermediateDirectories: true)
        try Data().write(to: directory.appendingPathComponent("..store-migrations.json.1234.tmp"))
        try FileManager.default.createSymbolicLink(
            at: directory.appendingPathComponent("link"), withDestinationURL: directory.appendingPathComponent("a"))

        #expect(try directoryHandle().files() == [
            ".hidden", "a/.store-migrations.json", "a/deeper/y.jpg", "a/x.jpg", "b.png", "link",
        ])
    }

    @Test func removeAllKeepsOnlyTheStoresOwnFiles() throws {
        try store().updateRecord(of: "thumbnails") { $0.setBaseline("1") }
        try seed(["b.png", "a/x.jpg", ".hidden"])
        try directoryHandle().removeAll()
        #expect(try everything() == [".store-migrations.json"])
        #expect(try store().states() == ["thumbnails": LevelState(level: "1")])
    }

    @Test func removeItemsRemovesMatchingFilesOnly() throws {
        try seed(["a.tmp", "keep.png", "sub/b.tmp", "sub/c.png"])
        let removed = try directoryHandle().removeItems { $0.hasSuffix(".tmp") }
        #expect(removed == ["a.tmp", "sub/b.tmp"])
        #expect(try directoryHandle().files() == ["keep.png", "sub/c.png"])
    }

    @Test func moveCreatesFoldersReplacesAndIsIdempotent() throws {
        try seed(["a.png", "old/b.png", "new/b.png", "dir/x", "target/y"])
        let cache = try directoryHandle()

        try cache.move("a.png", to: "v2/large/a.png")
        try cache.move("a.png", to: "v2/large/a.png")
        try cache.move("old/b.png", to: "new/b.png")
        try cache.move("dir", to: "target")

        #expect(try cache.files() == ["new/b.png", "target/x", "v2/large/a.png"])
        #expect(try contents("v2/large/a.png") == "a.png")
        #expect(try contents("new/b.png") == "old/b.png")
    }

    @Test func moveOfNothingIsATypedError() throws {
        let error = #expect(throws: FileStoreError.self) { try directoryHandle().move("missing", to: "also-missing") }
        #expect(error?.operation == .move)
        #expect(error?.code == ENOENT)
    }

    @Test func helperErrorsInsideAStepNameTheMigration() throws {
        let error = #expect(throws: FileStoreError.self) {
            try store().apply(storeMigration("thumbnails", "1.1") { (cache: inout CacheDirectory) in
                try cache.move("missing", to: "also-missing")
            })
        }
        #expect(error?.migration == .migration(manager: "thumbnails", version: "1.1"))
        #expect(error?.description.contains("runs again on the next launch") == true)
        #expect(try store().states() == [:])
    }

    @Test(arguments: ["/etc/passwd", "../outside", "a/../../outside", "", ".", ".store-migrations.json", ".store-migrations.lock", "./.store-migrations.json/x"])
    func helpersRefusePathsOutsideTheDirectoryOrIntoTheStoresFiles(path: String) throws {
        try store().updateRecord(of: "thumbnails") { $0.setBaseline("1") }
        try seed(["a.png"])
        let before = try everything()
        let cache = try directoryHandle()
        #expect(throws: CacheStoreError.self) { try cache.move(path, to: "b.png") }
        #expect(throws: CacheStoreError.self) { try cache.move("a.png", to: path) }
        #expect(try everything() == before)
    }
}
