import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// A file-system operation of a file-backed store failed: reading or replacing its file, taking
/// its lock, or a ``CacheDirectory`` helper moving or removing files.
///
/// The message names the file, the store, the migration when known, the system's reason and what
/// to do:
///
/// ```swift
/// do {
///     _ = try store.readStates()
/// } catch let error as FileStoreError {
///     print(error)
///     // Could not read preferences file /…/prefs.json: Permission denied (errno 13). Nothing
///     // was migrated. …
/// }
/// ```
public struct FileStoreError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// The step that failed.
    public enum Operation: Sendable, Hashable {
        /// Reading the store's file.
        case read
        /// Checking, before a step runs, that the store's file may be replaced: it is refused when
        /// this process may not write it or it has no write permission at all.
        case checkWritable
        /// Creating the temporary file a new version of the store's file is written to.
        case createTemporaryFile
        /// Writing the temporary file.
        case write
        /// Flushing the temporary file to disk.
        case synchronize
        /// Renaming the temporary file over the store's file.
        case replace
        /// Flushing the directory entry of the replaced file to disk.
        case synchronizeDirectory
        /// Creating the store's directory.
        case createDirectory
        /// Opening (or creating) the lock file.
        case openLockFile
        /// Locking the lock file.
        case lock
        /// Waiting for another process to release the lock, past the store's lock timeout.
        case waitForLock
        /// Listing a directory's contents.
        case list
        /// Moving a file or folder.
        case move
        /// Removing a file or folder.
        case remove
    }

    /// The step that failed.
    public let operation: Operation
    /// The file or folder the step acted on.
    public let path: String
    /// The store, as its `description` names it.
    public let store: String
    /// The migration that was running, when there was one.
    public internal(set) var migration: MigrationReference?
    /// The `errno` value the system reported, when the failure came from a system call.
    public let code: Int32?
    /// The system's explanation, or why the step gave up.
    public let reason: String

    init(
        _ operation: Operation, path: String, store: String, code: Int32?, reason: String,
        migration: MigrationReference? = nil
    ) {
        self.operation = operation
        self.path = path
        self.store = store
        self.code = code
        self.reason = reason
        self.migration = migration
    }

    /// A failed system call, explained by `strerror`, with `detail` (such as a move's
    /// destination) appended as is.
    static func system(
        _ operation: Operation, path: String, store: String, code: Int32, detail: String? = nil
    ) -> FileStoreError {
        FileStoreError(
            operation, path: path, store: store, code: code,
            reason: "\(String(cString: strerror(code))) (errno \(code))" + (detail ?? ""))
    }

    /// Creates `folder` and its parents, unless they exist.
    package static func createFolder(_ folder: URL, store: String) throws {
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw FileStoreError.foundation(.createDirectory, path: folder.path, store: store, error: error)
        }
    }

    /// Flushes `folder` to disk, so that `file` (the store's, which an error names), just
    /// renamed or linked into it, is still there after a power loss. A file system that cannot
    /// sync folders has nothing more to do.
    package static func synchronizeFolder(_ folder: String, of file: String, store: String) throws {
        let descriptor = open(folder, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw FileStoreError.system(.synchronizeDirectory, path: file, store: store, code: errno)
        }
        defer { close(descriptor) }
        if fsync(descriptor) != 0, errno != EINVAL {
            throw FileStoreError.system(.synchronizeDirectory, path: file, store: store, code: errno)
        }
    }

    /// A failed `FileManager` call; its POSIX code is kept when Foundation reports one.
    static func foundation(_ operation: Operation, path: String, store: String, error: any Error) -> FileStoreError {
        let nsError = error as NSError
        let posix = nsError.domain == NSPOSIXErrorDomain
            ? nsError
            : (nsError.userInfo[NSUnderlyingErrorKey] as? NSError).flatMap { $0.domain == NSPOSIXErrorDomain ? $0 : nil }
        if let posix {
            return .system(operation, path: path, store: store, code: Int32(posix.code))
        }
        return FileStoreError(operation, path: path, store: store, code: nil, reason: nsError.localizedDescription)
    }


    /// The message: what failed, where, and what to do.
    public var description: String {
        let during = migration.map { " during migration \($0)" } ?? ""
        let directory = (path as NSString).deletingLastPathComponent
        let failure = "\(summary)\(isStoreFile ? "" : " (\(store))")\(during): \(reason)."
        switch operation {
        case .read where code == ENOTDIR, .createDirectory where code == ENOTDIR:
            // Not a matter of permissions: a file stands where a folder of the path should be.
            return failure + " Nothing was migrated. A part of the path is a file, not a folder: move "
                + "that file, or give the store another path."
        case .read:
            return failure + " Nothing was migrated. Make sure this process may read the file "
                + "(permissions, data protection) and launch again; an unreadable store is never "
                + "taken for an empty one."
        case .checkWritable:
            return failure + " Nothing was migrated and the file was left as it is: the store never "
                + "replaces a file its owner protected. Make it writable for this process (chmod u+w, "
                + "or run as its owner) and launch again."
        case .createTemporaryFile, .write, .synchronize, .replace:
            return failure + " The store's file was left as it was and no level was recorded. "
                + "Check the free disk space and write permission in \(directory), then launch again."
        case .synchronizeDirectory:
            return failure + " The new contents are already in place but may not survive a power "
                + "loss. Check the disk holding \(directory); nothing needs undoing."
        case .createDirectory:
            return failure + " Nothing was migrated. Check that the parent folder is writable, "
                + "or create the folder before launching."
        case .openLockFile, .lock:
            return failure + " Nothing was migrated. The lock file must be creatable and lockable: "
                + "check write permission in \(directory) and that the volume supports flock."
        case .waitForLock:
            return failure + " Another process (the app, an extension, another instance) is "
                + "migrating this store; this one migrated nothing. Launch again once it has "
                + "finished, or give the store a longer lockTimeout. The lock is released as soon "
                + "as its holder finishes or exits."
        case .list, .move, .remove:
            return failure + " A cache migration is not transactional: the folder may be partly "
                + "changed and the level was not recorded, so the migration runs again on the "
                + "next launch. Keep cache migrations idempotent, and check permissions in "
                + "\(directory)."
        }
    }

    /// The same message as ``description``.
    public var errorDescription: String? { description }

    /// Whether `path` is the store's own file, which the store's description already names
    /// ("preferences file /…/prefs.json"): the message then names it once, by the description.
    private var isStoreFile: Bool { store.hasSuffix(" " + path) }

    private var summary: String {
        let file = isStoreFile ? store : path
        switch operation {
        case .read: return "Could not read \(file)"
        case .checkWritable: return "Will not replace the protected \(isStoreFile ? store : "file \(path)")"
        case .createTemporaryFile: return "Could not create the temporary file \(path)"
        case .write: return "Could not write the temporary file \(path)"
        case .synchronize: return "Could not flush the temporary file \(path) to disk"
        case .replace: return "Could not replace \(file)"
        case .synchronizeDirectory: return "Could not flush the folder of \(file) to disk"
        case .createDirectory: return "Could not create the folder \(path)"
        case .openLockFile: return "Could not open the lock file \(path)"
        case .lock: return "Could not lock \(path)"
        case .waitForLock: return "Timed out waiting for the lock file \(path)"
        case .list: return "Could not list \(file)"
        case .move: return "Could not move \(file)"
        case .remove: return "Could not remove \(file)"
        }
    }
}

extension FileStoreError: MigrationAttributableError {
    package func attributed(to migration: MigrationReference) -> any Error {
        var error = self
        if error.migration == nil { error.migration = migration }
        return error
    }
}
