import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// A file that is only ever replaced whole: readers see the old contents or the new ones, never a
/// mix, even if the process or the machine dies half-way.
///
/// A write goes to a temporary file in the same folder (a rename is only atomic within one file
/// system), is flushed to disk, renamed over the target, and the folder is flushed so the rename
/// itself survives a power loss. Until the rename, a failure leaves the target byte-for-byte as it
/// was and removes the temporary file.
///
/// ```swift
/// let file = AtomicFile(url: prefsURL, store: "preferences file \(prefsURL.path)")
/// let old = try file.contents()            // nil when there is no file
/// try file.replaceContents(with: newData)
/// ```
struct AtomicFile: Sendable {
    /// A seam for tests: makes a step fail as if its system call had returned an `errno`.
    ///
    /// A failing `.write` first writes half the data, so tests see a genuinely partial file.
    struct Faults: Sendable {
        let errorNumber: @Sendable (FileStoreError.Operation) -> Int32?

        static let none = Faults { _ in nil }

        static func failing(_ operation: FileStoreError.Operation, errorNumber: Int32 = EIO) -> Faults {
            Faults { $0 == operation ? errorNumber : nil }
        }
    }

    let url: URL
    /// How errors name the store the file belongs to.
    let store: String
    var faults: Faults = .none

    /// Temporary files are hidden siblings of the target, named `.<name>.<UUID>.tmp`.
    var temporaryNamePrefix: String { "." + target.lastPathComponent + "." }

    /// The file writes go to: `url` with symbolic links resolved, so that replacing a file reached
    /// through a link replaces the file it points to and keeps the link.
    var target: URL { StoreIdentity.resolvingSymbolicLinks(url) }
    private static let temporaryNameSuffix = ".tmp"

    /// The file's contents, or `nil` when it does not exist.
    ///
    /// Any other failure (permissions, a folder in the way) throws: a file that cannot be read is
    /// never taken for a missing one.
    func contents() throws -> Data? {
        let path = url.path
        if let code = faults.errorNumber(.read) {
            throw FileStoreError.system(.read, path: path, store: store, code: code)
        }
        let descriptor = retryingInterrupted { open(path, O_RDONLY | O_CLOEXEC) }
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw FileStoreError.system(.read, path: path, store: store, code: errno)
        }
        defer { close(descriptor) }

        // Read straight into the result, sized from fstat (plus one byte, to see the end without
        // another round when the size is right), rather than through a zeroed buffer: a launch
        // reads every store's small file.
        var status = stat()
        let expected = fstat(descriptor, &status) == 0 ? Int(status.st_size) : 0
        var data = Data(count: max(expected + 1, 4_096))
        var length = 0
        while true {
            if length == data.count { data.count += max(data.count, 4_096) }
            let count = data.withUnsafeMutableBytes { bytes in
                read(descriptor, bytes.baseAddress! + length, bytes.count - length)
            }
            if count == 0 {
                data.count = length
                return data
            }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileStoreError.system(.read, path: path, store: store, code: errno)
            }
            length += count
        }
    }

    /// Throws unless the file, if it exists, may be replaced: this process may write it, and it
    /// has a write permission bit at all. Replacing goes through a rename, which the folder's
    /// permissions alone allow, so without this check a read-only file (or, for root, a
    /// `chmod a-w` one) would be replaced silently.
    func checkReplaceable() throws {
        let path = url.path
        var status = stat()
        guard stat(path, &status) == 0 else { return }
        if status.st_mode & 0o222 == 0 {
            throw FileStoreError(
                .checkWritable, path: path, store: store, code: EACCES,
                reason: "it has no write permission (mode \(String(status.st_mode & 0o7777, radix: 8)))")
        }
        if access(path, W_OK) != 0 {
            throw FileStoreError.system(.checkWritable, path: path, store: store, code: errno)
        }
    }

    /// Replaces the file's contents with `data`, creating the file if needed.
    ///
    /// An error thrown before the rename (`.createTemporaryFile`, `.write`, `.synchronize`,
    /// `.replace`) leaves the target as it was. An error from `.synchronizeDirectory` comes after
    /// the rename: the new contents are in place but their durability is not guaranteed. An
    /// existing target's permissions are kept, and its owner and group where this process may set
    /// them; a symbolic link at `url` stays, and the file it points to is replaced.
    func replaceContents(with data: Data) throws {
        let target = self.target
        let folder = target.deletingLastPathComponent()
        let temporaryPath = folder
            .appendingPathComponent("." + target.lastPathComponent + "." + UUID().uuidString + Self.temporaryNameSuffix).path
        let targetPath = target.path

        var existing = stat()
        let targetExists = stat(targetPath, &existing) == 0
        let mode = targetExists ? existing.st_mode & 0o7777 : 0o644

        if let code = faults.errorNumber(.createTemporaryFile) {
            throw FileStoreError.system(.createTemporaryFile, path: temporaryPath, store: store, code: code)
        }
        let descriptor = retryingInterrupted {
            open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        }
        guard descriptor >= 0 else {
            throw FileStoreError.system(.createTemporaryFile, path: temporaryPath, store: store, code: errno)
        }

        do {
            // open's mode is filtered by the umask; an existing file's mode is kept exactly.
            if targetExists, fchmod(descriptor, mode) != 0 {
                throw FileStoreError.system(.write, path: temporaryPath, store: store, code: errno)
            }
            // Only root (or a member of the group, for the group) may give a file away: where
            // the system refuses, the new file stays this process's, as any rewrite would leave it.
            if targetExists, existing.st_uid != geteuid() || existing.st_gid != getegid() {
                _ = fchown(descriptor, existing.st_uid, existing.st_gid)
            }
            try writeAll(data, to: descriptor, path: temporaryPath)
            try synchronize(descriptor, path: temporaryPath)
        } catch {
            close(descriptor)
            unlink(temporaryPath)
            throw error
        }
        // close can report a write the kernel deferred (network volumes).
        if close(descriptor) != 0 {
            let code = errno
            unlink(temporaryPath)
            throw FileStoreError.system(.write, path: temporaryPath, store: store, code: code)
        }

        let renameError = faults.errorNumber(.replace) ?? (rename(temporaryPath, targetPath) == 0 ? nil : errno)
        if let renameError {
            unlink(temporaryPath)
            throw FileStoreError.system(.replace, path: targetPath, store: store, code: renameError)
        }

        if let code = faults.errorNumber(.synchronizeDirectory) {
            throw FileStoreError.system(.synchronizeDirectory, path: url.path, store: store, code: code)
        }
        try FileStoreError.synchronizeFolder(folder.path, of: url.path, store: store)
    }

    /// Removes temporary files that writers killed mid-write left behind.
    ///
    /// Only safe while holding the store's lock, since every writer of the file holds it too.
    /// Best effort: a leftover that cannot be removed is harmless and is retried next time.
    func removeTemporaryLeftovers() {
        let folder = target.deletingLastPathComponent()
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return }
        for name in names where name.hasPrefix(temporaryNamePrefix) && name.hasSuffix(Self.temporaryNameSuffix) {
            unlink(folder.appendingPathComponent(name).path)
        }
    }

    private func writeAll(_ data: Data, to descriptor: Int32, path: String) throws {
        let injected = faults.errorNumber(.write)
        try data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            let end = injected == nil ? bytes.count : bytes.count / 2
            var offset = 0
            while offset < end {
                let written = write(descriptor, bytes.baseAddress! + offset, end - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw FileStoreError.system(.write, path: path, store: store, code: errno)
                }
                offset += written
            }
        }
        if let injected {
            throw FileStoreError.system(.write, path: path, store: store, code: injected)
        }
    }

    private func synchronize(_ descriptor: Int32, path: String) throws {
        if let code = faults.errorNumber(.synchronize) {
            throw FileStoreError.system(.synchronize, path: path, store: store, code: code)
        }
        #if canImport(Darwin)
        // Darwin's fsync leaves data in the drive's cache; F_FULLFSYNC flushes it, where supported.
        if fcntl(descriptor, F_FULLFSYNC) == 0 { return }
        #endif
        if fsync(descriptor) != 0 {
            throw FileStoreError.system(.synchronize, path: path, store: store, code: errno)
        }
    }

    private func retryingInterrupted(_ call: () -> Int32) -> Int32 {
        while true {
            let result = call()
            if result >= 0 || errno != EINTR { return result }
        }
    }
}
