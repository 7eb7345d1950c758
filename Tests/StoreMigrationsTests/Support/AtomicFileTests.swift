import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

@Suite struct AtomicFileTests {
    let folder: TemporaryFolder
    let target: URL

    init() throws {
        folder = try TemporaryFolder()
        target = folder.file("store.json")
    }

    func file(failing operation: FileStoreError.Operation? = nil) -> AtomicFile {
        AtomicFile(
            url: target, store: "test store",
            faults: operation.map { .failing($0, errorNumber: ENOSPC) } ?? .none)
    }

    @Test func missingFileReadsAsNil() throws {
        #expect(try file().contents() == nil)
    }

    @Test func writeCreatesThenReplacesTheFile() throws {
        try file().replaceContents(with: Data("first".utf8))
        #expect(try Data(contentsOf: target) == Data("first".utf8))
        try file().replaceContents(with: Data("second, longer".utf8))
        #expect(try file().contents() == Data("second, longer".utf8))
        #expect(try folder.names() == ["store.json"])
    }

    @Test func largeContentsRoundTrip() throws {
        let data = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try file().replaceContents(with: data)
        #expect(try file().contents() == data)
    }

    @Test func keepsTheTargetsPermissions() throws {
        try Data("old".utf8).write(to: target)
        chmod(target.path, 0o600)
        try file().replaceContents(with: Data("new".utf8))
        let attributes = try FileManager.default.attributesOfItem(atPath: target.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
    }

    @Test(arguments: [
        FileStoreError.Operation.createTemporaryFile, .write, .synchronize, .replace,
    ])
    func failureBeforeTheRenameLeavesTheOldBytesAndNoTemporaryFile(
        operation: FileStoreError.Operation
    ) throws {
        let old = Data("{\"old\": true}\n".utf8)
        try old.write(to: target)

        let error = #expect(throws: FileStoreError.self) {
            try file(failing: operation).replaceContents(with: Data(repeating: 65, count: 10_000))
        }
        #expect(error?.operation == operation)
        #expect(error?.code == ENOSPC)
        #expect(error?.description.contains("test store") == true)
        #expect(error?.description.contains("left as it was") == true)
        #expect(try Data(contentsOf: target) == old)
        #expect(try folder.names() == ["store.json"])
    }

    @Test func failureWhenCreatingLeavesNoFileBehind() throws {
        #expect(throws: FileStoreError.self) {
            try file(failing: .write).replaceContents(with: Data("new".utf8))
        }
        #expect(try folder.names() == [])
    }

    @Test func failureAfterTheRenameReportsThatTheNewContentsAreInPlace() throws {
        try Data("old".utf8).write(to: target)
        let error = #expect(throws: FileStoreError.self) {
            try file(failing: .synchronizeDirectory).replaceContents(with: Data("new".utf8))
        }
        #expect(error?.operation == .synchronizeDirectory)
        #expect(error?.description.contains("already in place") == true)
        #expect(try Data(contentsOf: target) == Data("new".utf8))
        #expect(try folder.names() == ["store.json"])
    }

    @Test func unreadableFileIsAnErrorNotAMissingFile() throws {
        try Data("x".utf8).write(to: target)
        let error = #expect(throws: FileStoreError.self) {
            try file(failing: .read).contents()
        }
        #expect(error?.operation == .read)
        #expect(error?.path == target.path)
    }

    @Test func folderInTheWayIsAnError() throws {
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: false)
        let error = #expect(throws: FileStoreError.self) { try file().contents() }
        #expect(error?.operation == .read)
        #expect(error?.code == EISDIR)
    }

    @Test func missingFolderFailsToWriteWithATypedError() throws {
        let nested = AtomicFile(url: folder.file("missing/store.json"), store: "test store")
        let error = #expect(throws: FileStoreError.self) {
            try nested.replaceContents(with: Data("x".utf8))
        }
        #expect(error?.operation == .createTemporaryFile)
        #expect(error?.code == ENOENT)
    }

    @Test func removesOnlyItsOwnTemporaryLeftovers() throws {
        let atomic = file()
        let leftover = folder.file(atomic.temporaryNamePrefix + UUID().uuidString + ".tmp")
        try Data("partial".utf8).write(to: leftover)
        try Data("other".utf8).write(to: folder.file(".other.json.1234.tmp"))
        try Data("keep".utf8).write(to: target)

        atomic.removeTemporaryLeftovers()

        #expect(try folder.names() == [".other.json.1234.tmp", "store.json"])
    }
}
