import Foundation
import Testing
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// A small file system of its own (tmpfs), for tests that need a full disk or a read-only
/// folder even as root, who ignores permissions. Unmounted when released.
package final class ScratchMount {
    package let url: URL

    /// Why no tmpfs can be mounted here (root in a container that allows it can), or `nil`
    /// where one can: found by mounting one, once per test process.
    package static let unavailableReason: String? = {
        switch make(size: 64 * 1024) {
        case .success: return nil
        case .failure(let reason): return oneLine(reason.description)
        }
    }()

    package static var isAvailable: Bool { unavailableReason == nil }

    /// Why ``makeReadOnly(_:)`` fails here (as root it needs a bind mount), or `nil` where it
    /// works: found by making a scratch folder read-only, once per test process.
    package static let readOnlyUnavailableReason: String? = {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("StoreMigrationsReadOnly-\(UUID().uuidString)")
        defer {
            makeWritable(folder)
            try? FileManager.default.removeItem(at: folder)
        }
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try makeReadOnly(folder)
            return nil
        } catch {
            return oneLine("\(error)")
        }
    }()

    package static var canMakeReadOnly: Bool { readOnlyUnavailableReason == nil }

    /// `text` on one line, for a skipped test's comment: `mount` explains itself over several.
    private static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
    }

    /// Mounts a tmpfs of `size` bytes at a new temporary folder, or explains why it cannot.
    package static func make(size: Int) -> Result<ScratchMount, ProcessTestFailure> {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("StoreMigrationsMount-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        } catch {
            return .failure(ProcessTestFailure("cannot create \(url.path): \(error)"))
        }
        let result = run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size),mode=0755", "tmpfs", url.path])
        guard result.status == 0 else {
            try? FileManager.default.removeItem(at: url)
            return .failure(ProcessTestFailure("mounting a tmpfs failed (\(result.output.trimmingCharacters(in: .whitespacesAndNewlines)))"))
        }
        return .success(ScratchMount(url: url))
    }

    private init(url: URL) {
        self.url = url
    }

    deinit {
        // Lazy, in case a store of the test still has a file open.
        _ = Self.run("/bin/umount", ["-l", url.path])
        try? FileManager.default.removeItem(at: url)
    }

    /// Makes `folder`, below the mount or anywhere, read-only: a read-only bind mount when
    /// running as root (who ignores permissions), removed write permission otherwise.
    package static func makeReadOnly(_ folder: URL) throws {
        if geteuid() == 0 {
            for arguments in [["--bind", folder.path, folder.path], ["-o", "remount,ro,bind", folder.path]] {
                let result = run("/bin/mount", arguments)
                guard result.status == 0 else {
                    throw ProcessTestFailure("mount \(arguments.joined(separator: " ")) failed: \(result.output)")
                }
            }
        } else {
            try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: folder.path)
        }
    }

    /// Undoes ``makeReadOnly(_:)``.
    package static func makeWritable(_ folder: URL) {
        if geteuid() == 0 {
            _ = run("/bin/umount", [folder.path])
        } else {
            try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
        }
    }

    private static func run(_ tool: String, _ arguments: [String]) -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        do {
            try process.run()
        } catch {
            return (-1, "\(error)")
        }
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }
}

extension Trait where Self == ConditionTrait {
    /// Runs the test only where a tmpfs can be mounted; elsewhere it shows as skipped, saying why.
    package static var needsScratchMount: Self {
        .enabled(if: ScratchMount.isAvailable, "needs a tmpfs mount: \(ScratchMount.unavailableReason ?? "")")
    }

    /// Runs the test only where a folder can be made read-only; elsewhere it shows as skipped,
    /// saying why.
    package static var needsReadOnlyFolder: Self {
        .enabled(if: ScratchMount.canMakeReadOnly, "needs a read-only folder: \(ScratchMount.readOnlyUnavailableReason ?? "")")
    }
}
