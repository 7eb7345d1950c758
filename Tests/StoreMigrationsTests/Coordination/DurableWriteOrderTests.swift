import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

/// The order in which a file store's step reaches the disk, read from the system calls of a real
/// process (`strace -f -y`): the new contents go to a temporary file, which is flushed, renamed
/// over the live file, and then the folder is flushed; the live file is never opened for writing.
/// That order is what makes a power cut leave the old file or the new one.
@Suite(.enabled(if: Strace.works, "needs strace with ptrace allowed (apt-get install strace)"))
struct DurableWriteOrderTests {
    /// One system call of the trace, with the paths strace printed for its arguments and result.
    struct Call {
        let index: Int
        let name: String
        let text: String
    }

    /// Runs one step of `store` under strace and returns its file system calls, in order.
    func trace(_ store: String, in folder: TemporaryFolder) throws -> [Call] {
        let runner = try CrashRunnerExecutable()
        let traceURL = folder.file("trace.txt")
        let child = try ChildProcess(
            executable: Strace.url!,
            arguments: ["-f", "-y", "-qq", "-o", traceURL.path,
                        "-e", "trace=openat,open,creat,write,pwrite64,fsync,fdatasync,rename,renameat,renameat2,truncate,ftruncate",
                        runner.url.path, "step", folder.file("stores").path, store],
            logs: folder.url)
        let exit = try #require(child.wait(timeout: eventWaitBound), "the traced step never ended")
        try #require(exit.status == 0, "\(exit)")
        let lines = try String(contentsOf: traceURL, encoding: .utf8).split(separator: "\n").map(String.init)
        return lines.enumerated().compactMap { index, line in
            // "1234  name(args) = result": the pid, padded with spaces, then the call.
            let call = line.drop { $0 != " " }.drop { $0 == " " }
            guard let open = call.firstIndex(of: "(") else { return nil }
            return Call(index: index, name: String(call[..<open]), text: String(call))
        }
    }

    /// Checks the durable order for the live file `live`, whose temporary siblings are named
    /// `.<name>.<UUID>.tmp`.
    func expectDurableOrder(_ calls: [Call], live: URL, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let livePath = live.path
        let folderPath = live.deletingLastPathComponent().path
        let temporaryPrefix = folderPath + "/." + live.lastPathComponent + "."

        let rename = try #require(calls.last { call in
            call.name.hasPrefix("rename") && call.text.contains("\"\(temporaryPrefix)") && call.text.contains("\"\(livePath)\"")
        }, "no rename of a temporary file over \(livePath)", sourceLocation: sourceLocation)
        // The temporary file's path, as the rename names it.
        let temporary = try #require(rename.text.split(separator: "\"").map(String.init).first { $0.hasPrefix(temporaryPrefix) })

        let writes = calls.filter { ($0.name == "write" || $0.name == "pwrite64") && $0.text.contains("<\(temporary)>") }
        let flushes = calls.filter { ($0.name == "fsync" || $0.name == "fdatasync") && $0.text.contains("<\(temporary)>") }
        let folderFlushes = calls.filter { $0.name == "fsync" && $0.text.contains("<\(folderPath)>)") }
        #expect(!writes.isEmpty, "the new contents are written to \(temporary)", sourceLocation: sourceLocation)
        #expect(flushes.contains { flush in writes.allSatisfy { $0.index < flush.index } && flush.index < rename.index },
                "the temporary file is flushed after its last write and before the rename", sourceLocation: sourceLocation)
        #expect(folderFlushes.contains { $0.index > rename.index }, "the folder is flushed after the rename",
                sourceLocation: sourceLocation)

        // Never written in place: no open of the live file for writing, no write through it.
        let inPlace = calls.filter { call in
            let namesLive = call.text.contains("\"\(livePath)\"") || call.text.contains("<\(livePath)>")
            guard namesLive, !call.name.hasPrefix("rename") else { return false }
            return call.name == "write" || call.name == "pwrite64" || call.name.contains("truncate") || call.name == "creat"
                || call.text.contains("O_WRONLY") || call.text.contains("O_RDWR") || call.text.contains("O_TRUNC")
        }
        #expect(inPlace.map(\.text) == [], "the live file is only ever replaced", sourceLocation: sourceLocation)
    }

    @Test func aPreferencesStepWritesATemporaryFileFlushesRenamesThenFlushesTheFolder() throws {
        let folder = try TemporaryFolder()
        let stores = folder.file("stores")
        try FileManager.default.createDirectory(at: stores, withIntermediateDirectories: true)
        let live = stores.appendingPathComponent("settings.json")
        try Data(#"{"kept": true}"#.utf8).write(to: live)

        try expectDurableOrder(try trace("prefs", in: folder), live: StoreIdentity.resolvingSymbolicLinks(live))
        #expect(try PreferencesStore(url: live).readRecords()["traced"]?.level == "1.0")
        #expect(try PreferencesStore(url: live).read().bool("kept") == true)
    }

    @Test func aCacheStepReplacesItsMarkerTheSameWay() throws {
        let folder = try TemporaryFolder()
        let cache = folder.file("stores").appendingPathComponent("Thumbnails")
        try FileManager.default.createDirectory(at: cache, withIntermediateDirectories: true)
        let marker = cache.appendingPathComponent(".store-migrations.json")
        try Data(#"{"levels": {"other": {"level": "1"}}}"#.utf8).write(to: marker)

        try expectDurableOrder(try trace("thumbnails", in: folder), live: StoreIdentity.resolvingSymbolicLinks(marker))
        #expect(try CacheStore(directory: cache).readRecords().mapValues(\.level) == ["other": "1", "traced": "1.0"])
    }
}

/// The system's strace, if it may trace here (containers can forbid ptrace).
enum Strace {
    static let url = ["/usr/bin/strace", "/bin/strace"].map(URL.init(fileURLWithPath:))
        .first { FileManager.default.isExecutableFile(atPath: $0.path) }

    static let works: Bool = {
        guard let url else { return false }
        let process = Process()
        process.executableURL = url
        process.arguments = ["-o", "/dev/null", "/bin/true"]
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }()
}
