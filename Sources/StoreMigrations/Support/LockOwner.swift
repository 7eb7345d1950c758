import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// Finds which process holds a lock on a file, for the "waiting for another process" event and
/// the time-out errors.
///
/// Read from `/proc/locks` (Linux), never by asking the file: `fcntl(F_GETLK)` needs a descriptor
/// of its own, and closing any descriptor of a file drops every POSIX lock this process holds on
/// it, SQLite's among them. Elsewhere the holder is unknown (`nil`).
package enum LockOwner {
    /// The process holding a lock on the file at `path` that covers byte `offset` (any byte when
    /// nil), other than `excluded`, or nil when none is listed or the system does not say.
    package static func processID(onFileAt path: String, coveringByte offset: Int64? = nil, excluding excluded: Int32? = nil) -> Int32? {
        #if os(Linux)
        var status = stat()
        guard stat(path, &status) == 0,
              let table = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else { return nil }
        return processID(
            in: table, device: UInt64(status.st_dev), inode: UInt64(status.st_ino), coveringByte: offset, excluding: excluded)
        #else
        return nil
        #endif
    }

    /// The holder named by a `/proc/locks` table. Each line reads
    /// `id: KIND ADVISORY READ|WRITE pid major:minor:inode start end|EOF`, device numbers in
    /// hexadecimal; lines with `->` are processes waiting, not holding, and open-file-description
    /// locks list pid -1 (no single process owns them).
    package static func processID(
        in table: String, device: UInt64, inode: UInt64, coveringByte offset: Int64?, excluding excluded: Int32? = nil
    ) -> Int32? {
        let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~UInt64(0xfff))
        let minor = (device & 0xff) | ((device >> 12) & ~UInt64(0xff))
        for line in table.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 8, fields[1] != "->",
                  let pid = Int32(fields[4]), pid > 0, pid != excluded else { continue }
            let file = fields[5].split(separator: ":")
            guard file.count == 3,
                  UInt64(file[0], radix: 16) == major, UInt64(file[1], radix: 16) == minor,
                  UInt64(file[2]) == inode else { continue }
            if let offset {
                guard let start = Int64(fields[6]), start <= offset else { continue }
                if fields[7] != "EOF" {
                    guard let end = Int64(fields[7]), offset <= end else { continue }
                }
            }
            return pid
        }
        return nil
    }
}
