import Foundation
import StoreMigrations

/// A fresh folder under the system's temporary directory, removed when the test is done.
package final class TemporaryFolder {
    package let url: URL

    package init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("StoreMigrationsTests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    package func file(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// The names in the folder, sorted.
    package func names() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: url.path).sorted()
    }
}

/// A step of `manager` to `version` running `body`, as the coordinator hands it to a store.
package struct TestMigration<Content> {
    package init(manager: String, version: Version, run: (any MigrationRunControl)?, body: @escaping (inout Content) throws -> Void) {
        self.manager = manager
        self.version = version
        self.run = run
        self.body = body
    }

    package let manager: String
    package let version: Version
    /// The run whose context the step's content carries (progress, cancellation); `nil` for
    /// a standalone one.
    package var run: (any MigrationRunControl)?
    package let body: (inout Content) throws -> Void
}

package func storeMigration<Content>(
    _ manager: String, _ version: Version, _ body: @escaping (inout Content) throws -> Void
) -> TestMigration<Content> {
    TestMigration(manager: manager, version: version, run: nil, body: body)
}

extension MigrationStore {
    /// Runs one migration through the coordinator's step executor, as a run would.
    @discardableResult
    package func apply(_ migration: TestMigration<Content>) throws -> Outcome {
        try StepExecutor.migrate(
            migration.version, of: migration.manager, in: self,
            source: migration.run.map { StepSource(run: $0, step: 0) } ?? .standalone,
            carriesContext: migration.run != nil
        ) { content, _ in try migration.body(&content) }
    }

    /// Each manager's level and hook app version, as the tests written before records held
    /// sets compare them.
    package func states() throws -> [String: LevelState] {
        try readRecords().mapValues { LevelState(level: $0.level, appVersion: $0.appVersion) }
    }

    /// Throws the content away and forgets `manager`'s record, in a transaction of its own.
    package func rebuild(resetting manager: String) throws {
        try transaction { records, content in
            try rebuild(&content)
            records[manager] = nil
        }
    }

    /// ``states()``, for stores that cannot fail to read.
    package var recordedStates: [String: LevelState] { try! states() }

    /// Changes `manager`'s record in a transaction of its own, the content untouched.
    package func updateRecord(of manager: String, _ update: (inout MigrationRecord) -> Void) throws {
        try transaction { records, _ in
            var record = records[manager] ?? MigrationRecord()
            update(&record)
            records[manager] = record.isEmpty ? nil : record
        }
    }
}

package struct SimulatedBodyFailure: Error {
    package init() {}
}

/// A manager's level and hook app version.
package struct LevelState: Hashable, CustomStringConvertible {
    package var level: Version?
    package var appVersion: Version?

    package init(level: Version? = nil, appVersion: Version? = nil) {
        self.level = level
        self.appVersion = appVersion
    }

    package var description: String { "level \(level?.description ?? "none"), app version \(appVersion?.description ?? "none")" }
}
