import Dispatch
import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// A cache store's lock lives beside its directory, so that a step that removes and recreates
/// the whole directory keeps everyone else out until it is done.
@Suite struct CacheLockTests {
    let folder: TemporaryFolder
    let directory: URL

    init() throws {
        folder = try TemporaryFolder()
        directory = folder.file("Thumbnails")
    }

    @Test func theLockFileIsBesideTheDirectoryNotInIt() throws {
        // The folder's real path: the temporary folder may be reached through a link (/var on Darwin).
        let realFolder = try #require(realpath(folder.url.path, nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        })
        let expected = realFolder + "/Thumbnails.store-migrations.lock"
        #expect(CacheStore(directory: directory).lockURL.path == expected)
        // However the directory is spelled.
        #expect(CacheStore(directory: URL(fileURLWithPath: directory.path + "/", isDirectory: true)).lockURL.path == expected)
        #expect(CacheStore(directory: URL(fileURLWithPath: folder.url.path + "/./x/../Thumbnails")).lockURL.path == expected)

        let store = CacheStore(directory: directory)
        try store.apply(storeMigration("thumbnails", "1.0") { (cache: inout CacheDirectory) in
            try Data("a".utf8).write(to: cache.fileURL(for: "a.png"))
        })
        #expect(try folder.names() == ["Thumbnails", "Thumbnails.store-migrations.lock"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == [".store-migrations.json", "a.png"])
    }

    /// A step that deletes the whole directory and makes it again, while a second store object
    /// for the same directory (its own open file description, so `flock` excludes it as it would
    /// another process) tries to take the lock: the second gets in only once the step is done,
    /// and then sees its record.
    @Test func aSecondStoreWaitsWhileAStepRemovesAndRecreatesTheDirectory() throws {
        let first = CacheStore(directory: directory, lockTimeout: .seconds(eventWaitBound))
        let second = CacheStore(directory: directory, lockTimeout: .seconds(eventWaitBound))
        try first.apply(storeMigration("thumbnails", "1.0") { (cache: inout CacheDirectory) in
            try Data("old".utf8).write(to: cache.fileURL(for: "old.png"))
        })

        let log = EventLog()
        let removed = DispatchSemaphore(value: 0)
        let secondIsTrying = DispatchSemaphore(value: 0)
        let secondDone = DispatchSemaphore(value: 0)
        let directory = directory
        let secondStep = SendableBox<Result<Outcome, any Error>>()
        DispatchQueue.global().async {
            _ = removed.waitForEvent()
            log.append("second: taking the lock")
            secondIsTrying.signal()
            secondStep.value = Result {
                try second.apply(storeMigration("downloads", "1.0") { (cache: inout CacheDirectory) in
                    log.append("second: in, sees \(try cache.files())")
                })
            }
            log.append("second: done")
            secondDone.signal()
        }

        let outcome = try first.apply(storeMigration("thumbnails", "2.0") { (cache: inout CacheDirectory) in
            log.append("first: in")
            try FileManager.default.removeItem(at: directory)
            log.append("first: removed the directory")
            removed.signal()
            _ = secondIsTrying.waitForEvent()
            // The second store is now waiting for the lock, or (if it could take it) inside.
            Thread.sleep(forTimeInterval: 0.2)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
            try Data("new".utf8).write(to: directory.appendingPathComponent("new.png"))
            log.append("first: recreated the directory")
        })
        log.append("first: done")
        #expect(outcome.isApplied)
        #expect(secondDone.waitForEvent())

        #expect(try secondStep.value?.get().isApplied == true)
        #expect(log.all == [
            "first: in", "first: removed the directory", "second: taking the lock", "first: recreated the directory",
            "first: done", "second: in, sees [\"new.png\"]", "second: done",
        ])
        // The second store read the marker again under the lock: both records are kept.
        #expect(try first.readRecords().mapValues(\.appliedVersions) == ["thumbnails": ["1.0", "2.0"], "downloads": ["1.0"]])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == [".store-migrations.json", "new.png"])
        #expect(try folder.names() == ["Thumbnails", "Thumbnails.store-migrations.lock"])
    }

    /// Two store objects with one identity, one reaching the directory through a symbolic link
    /// to it, as two processes configured with different paths would: they must exclude each
    /// other, since the scheduler (one process) is all that keeps them apart otherwise.
    @Test
    func aStoreReachingTheDirectoryThroughALinkTakesTheSameLock() throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let link = folder.file("ThumbnailsLink")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: directory)
        let real = CacheStore(directory: directory)
        let linked = CacheStore(directory: link, lockTimeout: .milliseconds(100))
        #expect(real.identity == linked.identity)
        try real.transaction { _, _ in
            let error = #expect(throws: FileStoreError.self, "the linked store got in while the real one held the lock") {
                try linked.transaction { _, _ in }
            }
            #expect(error?.operation == .waitForLock)
        }
    }
}

/// A value handed from one thread to another, guarded by a lock.
final class SendableBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value?

    var value: Value? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
