#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A read of a database file that no connection is writing, without the cost of an ordinary
/// connection: the file is opened `immutable` (no `-wal` or `-shm` file created and unlinked,
/// which is most of what reading a WAL database costs), while a shared lock taken through
/// SQLite's own file object keeps writers from changing the file under the read.
///
/// An `immutable` connection trusts the file alone: it neither takes locks nor looks for a
/// `-wal` (committed pages not yet in the file) or a hot `-journal` (pages of a crashed
/// transaction to roll back). So the read holds SQLite's shared lock itself, as an ordinary
/// reader does (through the VFS, which keeps the process's other connections' locks intact), and
/// goes ahead only when neither file is beside the database once the lock is held:
/// - a writer in rollback-journal mode then cannot write the file until the lock is released:
///   it needs the exclusive lock to;
/// - a writer in WAL mode writes the file only through a checkpoint of a `-wal` file it created
///   after the check, which stays there after the read: the last connection to close deletes it
///   only under an exclusive lock, which the read's lock refuses. So the `-wal` is looked for
///   again after the read, and a read that finds one is thrown away.
/// Whenever the lock cannot be taken, either file is there, or anything fails, the read gives
/// `nil` and the caller reads the ordinary way, which waits, rolls back or reads the WAL as SQLite
/// does, and reports the errors.
///
/// Nor is it tried where the ordinary read of a WAL database could not create its `-wal` and
/// `-shm` files (a folder it may not write, a full disk): that read fails, and planning must
/// fail with it, before any step of any store runs, whichever way the file is read.
///
/// A fleet's walk threads read the same way, but through a connection each keeps, to which each
/// tenant's file is attached `immutable` in turn (``AttachedFileRead``), rather than a connection
/// opened and closed a file: the same lock on the attached file's own file object, the same
/// checks, the same fallback (``underSharedLock(of:in:path:_:)``).
enum UnchangedFileRead {
    /// What `body` read from the database at `path` opened `immutable` under a shared lock, or
    /// `nil` when that is not safe or did not work.
    static func read<T>(path: String, busyTimeout: TimeInterval, _ body: (Database) throws -> T) -> T? {
        guard ordinaryReadCanCreateFiles(beside: path),
              let db = try? Database(path: path, busyTimeout: busyTimeout, mode: .immutable)
        else { return nil }
        return underSharedLock(of: "main", in: db, path: path) { try body(db) }
    }

    /// What `body` read while SQLite's shared lock is held on the file of `schema`, a database of
    /// `db` opened `immutable` from `path`; `nil` when the lock is refused, a `-wal` or `-journal`
    /// file is beside the database before the read or a `-wal` after it, or `body` throws or
    /// gives `nil`.
    static func underSharedLock<T>(of schema: String, in db: Database, path: String, _ body: () throws -> T?) -> T? {
        // The file object belongs to the connection: it must outlive the unlock.
        withExtendedLifetime(db) {
            var file: UnsafeMutablePointer<sqlite3_file>?
            guard sqlite3_file_control(db.handle, schema, SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK,
                  let file, let methods = file.pointee.pMethods, let lock = methods.pointee.xLock,
                  let unlock = methods.pointee.xUnlock, lock(file, SQLITE_LOCK_SHARED) == SQLITE_OK
            else { return nil }
            defer { _ = unlock(file, SQLITE_LOCK_NONE) }
            let wal = path + "-wal"
            guard !exists(wal), !exists(path + "-journal"), let result = try? body(), !exists(wal) else { return nil }
            return result
        }
    }

    /// Whether the folder of `path` takes new files, with room for a `-shm` file's first
    /// 32 KiB and more: writable, and neither out of space nor of inodes (where the file system
    /// counts them).
    static func ordinaryReadCanCreateFiles(beside path: String) -> Bool {
        let folder = path.lastIndex(of: "/").map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        var status = statvfs()
        guard access(folder, W_OK) == 0, statvfs(folder, &status) == 0 else { return false }
        return UInt64(status.f_bavail) * UInt64(status.f_frsize) >= 64 * 1_024 && (status.f_files == 0 || status.f_favail >= 2)
    }

    private static func exists(_ path: String) -> Bool {
        access(path, F_OK) == 0 || errno != ENOENT
    }

    /// `path` as the URI SQLite opens `immutable`: every byte but unreserved ones and `/`
    /// percent-encoded, so that `?`, `#` and `%` in a name stay part of it. Written in one pass
    /// into the string's own storage, allocated once: building it as an array of bytes, then a
    /// string, was still a visible part of a fleet's check (Benchmarks/BENCHMARKS.md).
    static func immutableURI(_ path: String) -> String {
        let prefix = "file:".utf8, suffix = "?immutable=1".utf8
        return String(unsafeUninitializedCapacity: prefix.count + 3 * path.utf8.count + suffix.count) { uri in
            var end = 0
            func append(_ byte: UInt8) {
                uri[end] = byte
                end += 1
            }
            for byte in prefix { append(byte) }
            for byte in path.utf8 {
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                     UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                    append(byte)
                default:
                    append(UInt8(ascii: "%"))
                    append(hexDigit(byte >> 4))
                    append(hexDigit(byte & 0xF))
                }
            }
            for byte in suffix { append(byte) }
            return end
        }
    }

    /// The upper-case hexadecimal digit of `value` (0 to 15).
    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }
}
