import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// An exclusive `flock(2)` on a lock file beside a store, so that several processes (an app and
/// its extension, several server instances) never migrate the same store at once.
///
/// The kernel releases the lock when its holder closes the file or dies, so a crash never leaves
/// a stale lock. `flock` locks belong to an open file description: two `FileLock`s on one file
/// exclude each other even within one process. The lock file is never deleted; deleting it while
/// someone holds it would let a third party lock a new file of the same name.
///
/// ```swift
/// try FileLock.withLock(url: lockURL, store: store.description, timeout: .seconds(30)) {
///     // read the level again, apply, write
/// }
/// ```
package final class FileLock {
    package let url: URL
    private(set) var descriptor: Int32

    /// Locks `url`, creating the file if needed, and waits at most `timeout` for another holder,
    /// telling `waiting` when the wait begins.
    ///
    /// - Throws: ``FileStoreError`` with operation `.waitForLock` after the timeout, `.openLockFile`
    ///   or `.lock` when the system refuses.
    package init(url: URL, store: String, timeout: Duration, waiting: TransactionRequest? = nil) throws {
        self.url = url
        let path = url.path
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        var pause = Duration.milliseconds(1)
        var reported = false

        while true {
            let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else {
                if errno == EINTR { continue }
                throw FileStoreError.system(.openLockFile, path: path, store: store, code: errno)
            }
            while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
                let code = errno
                if code == EINTR { continue }
                guard code == EWOULDBLOCK else {
                    close(descriptor)
                    throw FileStoreError.system(.lock, path: path, store: store, code: code)
                }
                if !reported, let waiting {
                    reported = true
                    waiting.waiting(StoreWait(
                        store: store, lock: "the lock file \(path)", holderProcessID: LockOwner.processID(onFileAt: path)))
                }
                let remaining = deadline - clock.now
                guard remaining > .zero else {
                    close(descriptor)
                    let holder = LockOwner.processID(onFileAt: path).map { " (pid \($0))" } ?? ""
                    throw FileStoreError(
                        .waitForLock, path: path, store: store, code: code,
                        reason: "another process\(holder) still held it after \(Self.describe(timeout))")
                }
                Thread.sleep(forTimeInterval: min(pause, remaining).seconds)
                pause = min(pause * 2, .milliseconds(50))
            }
            // Someone may have replaced the lock file between our open and flock; a lock on the
            // old file would exclude nobody, so lock the file the path names now.
            if Self.isSameFile(descriptor, path) {
                self.descriptor = descriptor
                return
            }
            close(descriptor)
        }
    }

    deinit {
        unlock()
    }

    /// Releases the lock; later calls do nothing.
    package func unlock() {
        guard descriptor >= 0 else { return }
        // Released explicitly rather than by the close alone: a process another thread spawns
        // holds a copy of every descriptor until it execs (one that never execs, for good), and
        // the lock lasts while any copy of its open file description is open.
        flock(descriptor, LOCK_UN)
        close(descriptor)
        descriptor = -1
    }

    /// Runs `body` while holding the lock on `url`.
    package static func withLock<T>(
        url: URL, store: String, timeout: Duration, waiting: TransactionRequest? = nil, _ body: () throws -> T
    ) throws -> T {
        let lock = try FileLock(url: url, store: store, timeout: timeout, waiting: waiting)
        defer { lock.unlock() }
        return try body()
    }

    /// Runs `body` holding a store's lock on `url`: creates the lock file's folder if needed
    /// (running creates what it needs; planning never takes the lock), then, under the lock,
    /// removes the temporary files writers of `file` killed mid-write left behind.
    static func withStoreLock<T>(
        url: URL, store: String, timeout: Duration, guarding file: AtomicFile, waiting: TransactionRequest? = nil,
        _ body: () throws -> T
    ) throws -> T {
        try FileStoreError.createFolder(url.deletingLastPathComponent(), store: store)
        return try withLock(url: url, store: store, timeout: timeout, waiting: waiting) {
            file.removeTemporaryLeftovers()
            return try body()
        }
    }

    private static func isSameFile(_ descriptor: Int32, _ path: String) -> Bool {
        var opened = stat(), named = stat()
        guard fstat(descriptor, &opened) == 0, stat(path, &named) == 0 else { return false }
        return opened.st_dev == named.st_dev && opened.st_ino == named.st_ino
    }

    private static func describe(_ duration: Duration) -> String {
        let value = duration.seconds
        return value == 1 ? "1 second" : "\(String(format: "%g", value)) seconds"
    }
}
