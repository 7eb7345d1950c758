import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// The cache directory a ``CacheStore`` migration body works on, with helpers that never touch
/// the store's own marker and lock files.
///
/// ```swift
/// thumbnails.register("2.0") { cache in
///     for path in try cache.files() where path.hasSuffix(".jpg") {
///         try cache.move(path, to: "jpeg/" + path)        // safe to run twice
///     }
///     try cache.removeItems { $0.hasSuffix(".tmp") }
/// }
/// ```
///
/// Cache migrations are not transactional: a step that fails or is interrupted leaves whatever
/// it did so far, its level is not recorded, and it runs again on the next launch. Write bodies
/// that are idempotent; the helpers are (``move(_:to:)`` treats an already-moved item as done).
/// Paths are relative to ``url``, separated by `/`.
public struct CacheDirectory: Sendable {
    /// The directory. It exists when a body runs.
    public let url: URL
    let store: String
    let migration: MigrationReference?

    init(url: URL, store: String, migration: MigrationReference?) {
        self.url = url
        self.store = store
        self.migration = migration
    }

    /// The URL of the item at `relativePath` inside the directory, whether it exists or not.
    ///
    /// The path is not checked; the other helpers refuse paths that leave the directory.
    public func fileURL(for relativePath: String) -> URL {
        url.appendingPathComponent(relativePath)
    }

    /// The relative paths of every file below the directory, sorted, such as `"a/b.png"`.
    ///
    /// Folders are descended but not listed; symbolic links are listed, not followed. The store's
    /// own files are left out.
    ///
    /// - Throws: ``FileStoreError`` with operation `.list` when a folder cannot be read.
    public func files() throws -> [String] {
        var files: [String] = []
        var pendingFolders = [""]
        while let folder = pendingFolders.popLast() {
            let absolute = folder.isEmpty ? url.path : url.appendingPathComponent(folder).path
            let names: [String]
            do {
                names = try FileManager.default.contentsOfDirectory(atPath: absolute)
            } catch {
                if folder.isEmpty, !Self.exists(absolute) { return [] }
                throw FileStoreError.foundation(.list, path: absolute, store: store, error: error)
            }
            for name in names where !(folder.isEmpty && CacheStore.isOwnFile(name)) {
                let relative = folder.isEmpty ? name : folder + "/" + name
                if Self.isFolder(url.appendingPathComponent(relative).path) {
                    pendingFolders.append(relative)
                } else {
                    files.append(relative)
                }
            }
        }
        return files.sorted()
    }

    /// Removes everything in the directory but the store's own files.
    ///
    /// - Throws: ``FileStoreError`` with operation `.list` or `.remove`.
    public func removeAll() throws {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: url.path)
        } catch {
            if !Self.exists(url.path) { return }
            throw FileStoreError.foundation(.list, path: url.path, store: store, error: error)
        }
        for name in names where !CacheStore.isOwnFile(name) {
            try remove(url.appendingPathComponent(name))
        }
    }

    /// Removes every file whose relative path matches `predicate` and returns their paths.
    ///
    /// Only files are offered (see ``files()``); folders they leave empty stay.
    ///
    /// ```swift
    /// try cache.removeItems { $0.hasPrefix("previews/") && $0.hasSuffix(".png") }
    /// ```
    @discardableResult
    public func removeItems(matching predicate: (String) throws -> Bool) throws -> [String] {
        var removed: [String] = []
        for path in try files() where try predicate(path) {
            try remove(fileURL(for: path))
            removed.append(path)
        }
        return removed
    }

    /// Moves the file or folder at `source` to `destination`, creating the folders leading to it
    /// and replacing what was there.
    ///
    /// When `source` is missing but `destination` exists, the move is taken as done by an earlier,
    /// interrupted run of the migration, and nothing happens.
    ///
    /// - Throws: ``CacheStoreError/invalidPath(path:directory:reason:migration:)`` for a path
    ///   outside the directory, or ``FileStoreError`` (`.move` when neither path exists).
    public func move(_ source: String, to destination: String) throws {
        let from = try resolve(source)
        let to = try resolve(destination)
        let destinationExists = Self.exists(to.path)
        guard Self.exists(from.path) else {
            if destinationExists { return }
            throw FileStoreError.system(
                .move, path: from.path, store: store, code: ENOENT, detail: "; nor does \(to.path) exist")
        }
        let parent = to.deletingLastPathComponent()
        if !Self.isFolder(parent.path) {
            do {
                try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
            } catch {
                throw FileStoreError.foundation(.createDirectory, path: parent.path, store: store, error: error)
            }
        }
        // rename(2) replaces a file atomically but will not replace a folder, nor a file by one.
        if destinationExists, Self.isFolder(from.path) || Self.isFolder(to.path) {
            try remove(to)
        }
        if rename(from.path, to.path) != 0 {
            throw FileStoreError.system(.move, path: from.path, store: store, code: errno, detail: " moving it to \(to.path)")
        }
    }

    /// The URL of `relativePath`, refused when it could reach outside the directory or into the
    /// store's own files.
    private func resolve(_ relativePath: String) throws -> URL {
        func refuse(_ reason: String) -> CacheStoreError {
            .invalidPath(path: relativePath, directory: url.path, reason: reason, migration: migration)
        }
        if relativePath.hasPrefix("/") { throw refuse("it is absolute") }
        let components = relativePath.split(separator: "/").filter { $0 != "." }
        if components.contains("..") { throw refuse("it contains \"..\"") }
        guard let first = components.first else { throw refuse("it names the directory itself") }
        if CacheStore.isOwnFile(String(first)) { throw refuse("it names one of the store's own files") }
        return components.reduce(url) { $0.appendingPathComponent(String($1)) }
    }

    /// Removes a file with unlink(2), a folder with its contents through FileManager. Caches hold
    /// many files, and FileManager costs about a millisecond a file on Linux.
    private func remove(_ item: URL) throws {
        if !Self.isFolder(item.path) {
            if unlink(item.path) == 0 || errno == ENOENT { return }
            throw FileStoreError.system(.remove, path: item.path, store: store, code: errno)
        }
        do {
            try FileManager.default.removeItem(at: item)
        } catch {
            if !Self.exists(item.path) { return }
            throw FileStoreError.foundation(.remove, path: item.path, store: store, error: error)
        }
    }

    /// Whether something (a dangling symbolic link included) is at `path`.
    private static func exists(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }

    /// Whether `path` is a folder itself, not a symbolic link to one.
    private static func isFolder(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR
    }
}
