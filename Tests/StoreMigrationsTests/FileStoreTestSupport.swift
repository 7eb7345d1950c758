import Foundation
@testable import StoreMigrations

/// A fresh folder under the system's temporary directory, removed when the test is done.
final class TemporaryFolder {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("StoreMigrationsTests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// The names in the folder, sorted.
    func names() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: url.path).sorted()
    }
}

/// A step of `manager` to `version` running `body`, as the coordinator would hand it to a store.
func storeMigration<Content>(
    _ manager: String, _ version: Version, _ body: @escaping (inout Content) throws -> Void
) -> StoreMigration<Content> {
    StoreMigration(
        manager: manager, version: version, context: MigrationContext(manager: manager, version: version),
        body: { content, _ in try body(&content) })
}

struct SimulatedBodyFailure: Error {}
