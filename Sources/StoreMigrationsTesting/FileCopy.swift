import Foundation

/// Copies of store files between a fixture and a location.
enum FileCopy {
    /// Puts a copy of `source` (a file or a folder) at `destination`, replacing what is there.
    static func replace(_ destination: URL, with source: URL) throws {
        let files = FileManager.default
        if files.fileExists(atPath: destination.path) { try files.removeItem(at: destination) }
        try files.createDirectory(at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
        try files.copyItem(at: source, to: destination)
    }

    /// The one item in `folder`: a fixture keeps each file store's file or directory under its
    /// original name.
    static func onlyItem(in folder: URL) throws -> URL {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".") }
        guard names.count == 1 else {
            throw UpgradeTestingError(
                store: folder.lastPathComponent,
                reason: .notAFixture(folder: folder.path, detail: "expected one file in the store's folder, found \(names.sorted())"))
        }
        return folder.appendingPathComponent(names[0])
    }
}
