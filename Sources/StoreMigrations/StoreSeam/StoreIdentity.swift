import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// The storage a ``MigrationStore`` stands for: a file's device and inode, a server's database
/// and schema, or the store object itself. Stores with one identity are one store to the
/// scheduler, which never runs two of their steps at once.
///
/// ```swift
/// var identity: StoreIdentity { .file(databaseURL) }
/// var identity: StoreIdentity {
///     StoreIdentity(kind: "postgresql", value: "db.example.com:5432/app/public")
/// }
/// ```
public struct StoreIdentity: Sendable, Hashable, CustomStringConvertible {
    /// An object's identity is kept as the object identifier itself: planning compares one per
    /// manager, and formatting it as text cost more than the rest of a large plan's bookkeeping.
    private enum Storage: Sendable, Hashable {
        case named(kind: String, value: String)
        case object(ObjectIdentifier)
    }

    private let storage: Storage

    /// What kind of storage it is: `"file"`, `"path"`, `"object"`, or a store's own word.
    public var kind: String {
        switch storage {
        case .named(let kind, _): return kind
        case .object: return "object"
        }
    }

    /// What names it within its kind.
    public var value: String {
        switch storage {
        case .named(_, let value): return value
        case .object(let identifier): return String(describing: identifier)
        }
    }

    /// An identity of your own, such as a server's address, database and schema.
    public init(kind: String, value: String) {
        storage = .named(kind: kind, value: value)
    }

    /// The object itself: no other object shares it.
    public init(object: AnyObject) {
        storage = .object(ObjectIdentifier(object))
    }

    /// The file or folder at `url`: its device and inode when it exists, so that two paths to one
    /// file (a symbolic link, a second mount) are one store; otherwise its path with symbolic
    /// links resolved as far as the path exists.
    public static func file(_ url: URL) -> StoreIdentity {
        var status = stat()
        if stat(standardizedPath(of: url), &status) == 0 {
            return StoreIdentity(kind: "file", value: "\(status.st_dev):\(status.st_ino)")
        }
        return StoreIdentity(kind: "path", value: resolvingSymbolicLinks(url).path)
    }

    /// `url` with every symbolic link resolved, as far as the path exists; the missing rest is
    /// appended as it is. File stores lock and replace the file this names, so that a store
    /// reached through a link locks and writes the same file as one given the real path.
    static func resolvingSymbolicLinks(_ url: URL) -> URL {
        // The standardized path is absolute, without `//` or a trailing `/`: its parents are its
        // prefixes before each `/`, cut without `NSString`'s path methods or a search and
        // replace through Foundation, a visible part of a new store's plan (BENCHMARKS.md).
        let path = standardizedPath(of: url)
        var existing = path[...]
        while existing != "/", !existing.isEmpty, access(String(existing), F_OK) != 0 {
            guard let slash = existing.lastIndex(of: "/") else {
                existing = existing[existing.startIndex..<existing.startIndex]
                break
            }
            existing = slash == existing.startIndex ? existing[...slash] : existing[..<slash]
        }
        var missing = path[existing.endIndex...]
        let resolved = realpath(String(existing), nil).map { pointer in
            defer { free(pointer) }
            return String(cString: pointer)
        } ?? String(existing)
        if resolved.hasSuffix("/"), missing.hasPrefix("/") { missing = missing.dropFirst() }
        let separator = resolved.hasSuffix("/") || missing.hasPrefix("/") || missing.isEmpty ? "" : "/"
        return URL(fileURLWithPath: resolved + separator + missing)
    }

    /// `url.standardizedFileURL.path`. A file URL's absolute path that standardizing would
    /// leave as it is (no `.` or `..` component, no `//`, no trailing `/`, nothing under
    /// `/private/` or `/var/automount/`, which Foundation may shorten) is its own standard form,
    /// found without making a new URL, which costs a launch more than the `stat` that follows.
    static func standardizedPath(of url: URL) -> String {
        let path = url.path
        guard url.isFileURL, isStandardized(path) else { return url.standardizedFileURL.path }
        return path
    }

    private static func isStandardized(_ path: String) -> Bool {
        var path = path
        return path.withUTF8 { bytes in
            guard bytes.first == UInt8(ascii: "/"), !bytes.starts(with: "/private/".utf8), !bytes.starts(with: "/var/automount/".utf8) else {
                return false
            }
            guard bytes.count > 1 else { return true }
            // The length of the component being read, and how many of its bytes are dots.
            var length = 0, dots = 0
            func isUnusual() -> Bool { length == 0 || (length == dots && dots <= 2) }
            for byte in bytes[1...] {
                if byte == UInt8(ascii: "/") {
                    if isUnusual() { return false }
                    length = 0
                    dots = 0
                } else {
                    length += 1
                    if byte == UInt8(ascii: ".") { dots += 1 }
                }
            }
            return !isUnusual()
        }
    }

    public var description: String { "\(kind) \(value)" }
}
