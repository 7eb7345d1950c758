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

/// A step of `manager` to `version` running `body`, as the coordinator hands it to a store.
struct TestMigration<Content> {
    let manager: String
    let version: Version
    /// The run whose context the step's content carries (progress, cancellation); `nil` for
    /// a standalone one.
    var run: (any MigrationRunControl)?
    let body: (inout Content) throws -> Void
}

func storeMigration<Content>(
    _ manager: String, _ version: Version, _ body: @escaping (inout Content) throws -> Void
) -> TestMigration<Content> {
    TestMigration(manager: manager, version: version, run: nil, body: body)
}

extension MigrationStore {
    /// Runs one migration through the coordinator's step executor, as a run would.
    @discardableResult
    func apply(_ migration: TestMigration<Content>) throws -> StepOutcome {
        try StepExecutor.migrate(
            migration.version, of: migration.manager, in: self,
            source: migration.run.map { StepSource(run: $0, step: 0) } ?? .standalone,
            carriesContext: migration.run != nil
        ) { content, _ in try migration.body(&content) }
    }

    /// Each manager's level and hook app version, as the tests written before records held
    /// sets compare them.
    func states() throws -> [String: LevelState] {
        try readRecords().mapValues { LevelState(level: $0.level, appVersion: $0.appVersion) }
    }

    /// Throws the content away and forgets `manager`'s record, in a transaction of its own.
    func rebuild(resetting manager: String) throws {
        try transaction { records, content in
            try rebuild(&content)
            records[manager] = nil
        }
    }

    /// ``states()``, for stores that cannot fail to read.
    var recordedStates: [String: LevelState] { try! states() }

    /// Changes `manager`'s record in a transaction of its own, the content untouched.
    func updateRecord(of manager: String, _ update: (inout MigrationRecord) -> Void) throws {
        try transaction { records, _ in
            var record = records[manager] ?? MigrationRecord()
            update(&record)
            records[manager] = record.isEmpty ? nil : record
        }
    }
}

struct SimulatedBodyFailure: Error {}

/// A manager's level and hook app version.
struct LevelState: Hashable, CustomStringConvertible {
    var level: Version?
    var appVersion: Version?

    init(level: Version? = nil, appVersion: Version? = nil) {
        self.level = level
        self.appVersion = appVersion
    }

    var description: String { "level \(level?.description ?? "none"), app version \(appVersion?.description ?? "none")" }
}
