import Foundation
import Testing
import StoreMigrations
import TestSupport

/// Squashed migrations on a cache directory: the squash's files, then the marker recording every
/// replaced migration, replaced atomically. The cache has no transaction: a squash that throws
/// records nothing, keeps what it wrote (the store is at-least-once and rebuildable) and runs
/// again at the next launch.
@Suite struct CacheSquashTests {
    let folder: TemporaryFolder
    let directory: URL

    init() throws {
        folder = try TemporaryFolder()
        directory = folder.file("Thumbnails")
    }

    func release(_ appVersion: Version, squash: Bool = true, failing: Bool = false) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: appVersion)
        let thumbnails = try coordinator.manager("thumbnails", store: CacheStore(directory: directory))
        thumbnails.register("1.0", options: .named("placeholder")) { cache in
            try Data("placeholder".utf8).write(to: cache.fileURL(for: "placeholder.png"))
        }
        thumbnails.register("1.1", options: .named("index", fingerprint: "empty index")) { cache in
            try Data("{}".utf8).write(to: cache.fileURL(for: "index.json"))
        }
        thumbnails.register("1.2", options: .named("wipe")) { cache in try cache.removeAll() }
        if squash {
            thumbnails.squash(from: "1.0", through: "1.1", options: .named("placeholder and index")) { cache in
                try Data("placeholder".utf8).write(to: cache.fileURL(for: "placeholder.png"))
                try Data("{}".utf8).write(to: cache.fileURL(for: "index.json"))
                try Data().write(to: cache.fileURL(for: "squashed"))
                if failing { throw TestFailure(message: "squash failed after its writes") }
            }
        }
        return coordinator
    }

    func record() throws -> MigrationRecord? { try CacheStore(directory: directory).readRecords()["thumbnails"] }
    func files() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { !$0.hasPrefix(".") }.sorted()
    }

    @Test func aFreshCacheRunsTheSquashAndRecordsEachReplacedMigrationWithItsNameAndFingerprint() throws {
        let report = try release("1.1").run()
        #expect(report.steps.map(\.id.description) == ["thumbnails:squash@1.1"])
        #expect(try files() == ["index.json", "placeholder.png", "squashed"])
        let record = try #require(try record())
        #expect(record.applied.map(\.version) == ["1.0", "1.1"])
        #expect(record.applied.map(\.name) == ["placeholder", "index"])
        #expect(record.appliedMigration("1.1")?.fingerprint == MigrationFingerprint(of: "empty index"))
        #expect(try release("1.2").run().steps.map(\.id.description) == ["thumbnails@1.2"])
        #expect(try files() == [])
    }

    @Test func aCachePartWayRunsTheReplacedMigrationsLeft() throws {
        #expect(try release("1.0", squash: false).run().succeeded)
        let report = try release("1.1").run()
        #expect(report.steps.map(\.id.description) == ["thumbnails@1.1"])
        #expect(try files() == ["index.json", "placeholder.png"])
        #expect(try record()?.applied.map(\.version) == ["1.0", "1.1"])
    }

    @Test func aCachePastTheRangeRunsNothingOfIt() throws {
        #expect(try release("1.1", squash: false).run().succeeded)
        let report = try release("1.2").run()
        #expect(report.steps.map(\.id.description) == ["thumbnails@1.2"])
        #expect(try record()?.applied.map(\.version) == ["1.0", "1.1", "1.2"])
    }

    @Test func aSquashThatThrowsRecordsNothingAndRunsAgainAtTheNextLaunch() throws {
        #expect(try !runReport(of: release("1.1", failing: true)).succeeded)
        #expect(try record() == nil)
        let report = try release("1.1").run()
        #expect(report.steps.map(\.id.description) == ["thumbnails:squash@1.1"])
        #expect(try record()?.applied.map(\.version) == ["1.0", "1.1"])
    }
}
