#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import Foundation
import StoreMigrations

/// The busy handler of a connection: when another connection or process holds the lock a
/// statement needs (another process's migration step, say), SQLite calls it until it gives up;
/// it waits, with growing pauses of at most 50 ms, until `timeout` has passed since the wait
/// began, and then lets the statement fail with `SQLITE_BUSY`.
///
/// A handler of its own rather than `sqlite3_busy_timeout`: it measures the wait on a clock
/// (SQLite's counts its own sleeps, which are whole seconds where `usleep` is missing), knows
/// when a wait begins (``waits``, for a "waiting for another process" report), and is installed
/// again after every step (``Database/installBusyHandler()``), since a body's
/// `PRAGMA busy_timeout` replaces it without a trace `PRAGMA busy_timeout` could read back.
final class BusyWait {
    /// How long a statement waits for a lock.
    let timeout: TimeInterval
    /// How many waits have begun on this connection.
    private(set) var waits = 0
    private var started = ContinuousClock.now
    /// Told when a wait begins, while ``reportingWaits(to:_:)`` runs.
    private var onWait: (() -> Void)?
    /// The database file whose locks are waited for.
    private let path: String
    /// The connection whose waits these are, to tell whether it holds the write lock itself.
    private let connection: OpaquePointer
    /// The holder when the last wait gave up, kept for the `SQLITE_BUSY` error the statement
    /// fails with next: by the time the error is made, the holder may be gone.
    private var holderWhenGivenUp: Holder?
    /// Tries made after the time-out because no process held the lock any more, in this wait.
    private var triesAfterRelease = 0
    /// At most this many such tries a wait: where the system never names a holder, each
    /// time-out would otherwise look like a release.
    private static let maxTriesAfterRelease = 3

    /// Who holds what a wait is for.
    struct Holder: Equatable {
        /// The process, where the system tells. It may be this process, through another connection.
        let processID: Int32?
        /// Whether the wait is for readers to finish rather than for the write lock: a connection
        /// that holds the write lock of a rollback-journal database waits, to commit (or to spill
        /// its cache), for every other connection's shared lock to go.
        let isReader: Bool
    }

    init(timeout: TimeInterval, path: String, connection: OpaquePointer) {
        self.timeout = max(0, timeout)
        self.path = path
        self.connection = connection
    }

    /// Who holds what this connection waits for, where the system tells: the write lock's
    /// holder, or, when this connection holds the write lock, a reader.
    var holder: Holder {
        guard sqlite3_txn_state(connection, nil) == SQLITE_TXN_WRITE else {
            return Holder(processID: writeLockHolder, isReader: false)
        }
        return Holder(processID: readLockHolder, isReader: true)
    }

    /// The process holding the database's write lock (the WAL writer's lock in the `-shm` file,
    /// or the rollback journal's reserved byte), where the system tells.
    private var writeLockHolder: Int32? {
        // The byte offsets are SQLite's file format: WAL_WRITE_LOCK is byte 120 of the shared
        // memory file, RESERVED_BYTE is the byte after PENDING_BYTE (0x40000000) of the database.
        LockOwner.processID(onFileAt: path + "-shm", coveringByte: 120)
            ?? LockOwner.processID(onFileAt: path, coveringByte: 0x4000_0001)
    }

    /// A process holding a rollback journal's shared lock, a reader: another process if one
    /// does, else this one. POSIX locks belong to processes, so this connection's own shared lock
    /// and another connection's of this process are one entry of `/proc/locks`; and when no other
    /// process reads, the reader this connection waits for is one of this process. `nil` for a
    /// WAL database, whose readers never block a commit: what does is not known.
    private var readLockHolder: Int32? {
        guard !FileManager.default.fileExists(atPath: path + "-wal") else { return nil }
        // SHARED_FIRST, PENDING_BYTE + 2: the first of the 510 bytes each reader locks for reading.
        let sharedFirst: Int64 = 0x4000_0002
        return LockOwner.processID(onFileAt: path, coveringByte: sharedFirst, excluding: getpid())
            ?? LockOwner.processID(onFileAt: path, coveringByte: sharedFirst)
    }

    /// The holder for an `SQLITE_BUSY` error: the one seen when the wait gave up, else (SQLite
    /// refuses some waits at once, without asking the handler) the one holding the lock now.
    /// Each give-up names its holder to one error only.
    func takeHolder() -> Holder {
        defer { holderWhenGivenUp = nil }
        return holderWhenGivenUp ?? holder
    }

    /// Whether to try again after the `count`-th refusal (from 0) of one wait, after a pause.
    func shouldRetry(after count: Int32) -> Bool {
        let now = ContinuousClock.now
        if count == 0 {
            started = now
            waits += 1
            holderWhenGivenUp = nil
            triesAfterRelease = 0
            onWait?()
        }
        let remaining = timeout - (now - started).seconds
        guard remaining > 0 else {
            // A lock released between SQLite's refusal and this look is free: try again rather
            // than fail a step that can go on, and an error that can name no holder.
            let current = holder
            if current.processID == nil, triesAfterRelease < Self.maxTriesAfterRelease {
                triesAfterRelease += 1
                return true
            }
            holderWhenGivenUp = current
            return false
        }
        let pause = min(0.001 * pow(2, Double(min(count, 6))), 0.05, remaining)
        Thread.sleep(forTimeInterval: pause)
        return true
    }

    /// Runs `body`, calling `report` when one of its statements begins to wait for a lock: the
    /// step's "waiting for another process" event, sent before the wait rather than after it.
    func reportingWaits<T>(to report: () -> Void, _ body: () throws -> T) rethrows -> T {
        try withoutActuallyEscaping(report) { report in
            let outer = onWait
            onWait = report
            defer { onWait = outer }
            return try body()
        }
    }
}

extension Database {
    /// Who holds what this connection waits for (the write lock, or readers when it holds the
    /// write lock itself), where the system tells.
    var lockHolder: BusyWait.Holder { busyWait.holder }

    /// Installs the connection's ``BusyWait`` as SQLite's busy handler, replacing whatever a
    /// body's `PRAGMA busy_timeout` put there.
    func installBusyHandler() {
        sqlite3_busy_handler(handle, { context, count in
            guard let context else { return 0 }
            return Unmanaged<BusyWait>.fromOpaque(context).takeUnretainedValue().shouldRetry(after: count) ? 1 : 0
        }, Unmanaged.passUnretained(busyWait).toOpaque())
    }
}
