import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

@Suite struct FileLockTests {
    let folder: TemporaryFolder
    let lockURL: URL

    init() throws {
        folder = try TemporaryFolder()
        lockURL = folder.file("store.json.lock")
    }

    /// Holds an exclusive flock through its own open file description, as another process would.
    func holdLock() throws -> Int32 {
        let descriptor = open(lockURL.path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        try #require(descriptor >= 0)
        try #require(flock(descriptor, LOCK_EX | LOCK_NB) == 0)
        return descriptor
    }

    @Test func createsTheLockFileAndLocksIt() throws {
        let lock = try FileLock(url: lockURL, store: "test store", timeout: .zero)
        #expect(FileManager.default.fileExists(atPath: lockURL.path))
        let other = open(lockURL.path, O_RDWR | O_CLOEXEC)
        defer { close(other) }
        #expect(flock(other, LOCK_EX | LOCK_NB) != 0)
        lock.unlock()
        #expect(flock(other, LOCK_EX | LOCK_NB) == 0)
    }

    @Test func timesOutWithATypedErrorNamingTheStoreAndLockFile() throws {
        let holder = try holdLock()
        defer { close(holder) }

        let start = ContinuousClock.now
        let error = #expect(throws: FileStoreError.self) {
            _ = try FileLock(url: lockURL, store: "preferences file /x/prefs.json", timeout: .milliseconds(80))
        }
        let waited = ContinuousClock.now - start
        #expect(waited >= .milliseconds(80))
        #expect(error?.operation == .waitForLock)
        #expect(error?.path == lockURL.path)
        #expect(error?.description.contains("preferences file /x/prefs.json") == true)
        #expect(error?.description.contains(lockURL.path) == true)
        #expect(error?.description.contains("0.08 seconds") == true)
    }

    @Test func isFreeAgainAfterTheHolderReleasesIt() throws {
        let holder = try holdLock()
        #expect(throws: FileStoreError.self) {
            _ = try FileLock(url: lockURL, store: "test store", timeout: .zero)
        }
        close(holder)
        let lock = try FileLock(url: lockURL, store: "test store", timeout: .zero)
        lock.unlock()
    }

    @Test func waitsForAHolderThatReleasesWithinTheTimeout() throws {
        let holder = try holdLock()
        let released = Locked(false)
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) {
            released.value = true
            close(holder)
        }
        // The holder lets go after 50 ms; a loaded machine may take far longer to get there.
        let lock = try FileLock(url: lockURL, store: "test store", timeout: .seconds(eventWaitBound))
        // Taken only once the holder let go: the lock waited for it.
        #expect(released.value)
        lock.unlock()
    }

    @Test func releasesOnDeinit() throws {
        do {
            _ = try FileLock(url: lockURL, store: "test store", timeout: .zero)
        }
        let again = try FileLock(url: lockURL, store: "test store", timeout: .zero)
        again.unlock()
    }

    @Test func withLockExcludesOtherLockersWhileTheBodyRuns() throws {
        let value = try FileLock.withLock(url: lockURL, store: "test store", timeout: .zero) {
            #expect(throws: FileStoreError.self) {
                _ = try FileLock(url: lockURL, store: "test store", timeout: .milliseconds(10))
            }
            return 42
        }
        #expect(value == 42)
        _ = try FileLock(url: lockURL, store: "test store", timeout: .zero)
    }

    /// A process that another thread spawns holds a copy of every descriptor until it execs,
    /// the lock's too: unlocking must release the lock while such a copy is still open.
    @Test func unlockReleasesTheLockWhileACopyOfItsDescriptorIsOpen() throws {
        let lock = try FileLock(url: lockURL, store: "test store", timeout: .zero)
        let copy = dup(lock.descriptor)
        try #require(copy >= 0)
        defer { close(copy) }
        lock.unlock()
        _ = try FileLock(url: lockURL, store: "test store", timeout: .zero)
    }

    @Test func missingFolderIsATypedError() throws {
        let error = #expect(throws: FileStoreError.self) {
            _ = try FileLock(url: folder.file("missing/x.lock"), store: "test store", timeout: .zero)
        }
        #expect(error?.operation == .openLockFile)
        #expect(error?.code == ENOENT)
    }
}
