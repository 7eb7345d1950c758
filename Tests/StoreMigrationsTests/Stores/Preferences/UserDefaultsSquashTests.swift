import Foundation
import Testing
import StoreMigrations
import TestSupport

/// Squashed migrations on a `UserDefaults` suite: the squashed body's keys and the records of
/// every replaced migration go in one `setPersistentDomain`, or nothing does. The suite is named
/// by a path in a temporary folder, as in `UserDefaultsStoreTests`, so the user's own stay untouched.
@Suite struct UserDefaultsSquashTests {
    let folder: TemporaryFolder
    let suite: String

    init() throws {
        folder = try TemporaryFolder()
        suite = folder.file("com.example.settings").path
    }

    func release(_ appVersion: Version, squash: Bool = true, failing: Bool = false) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: appVersion)
        let settings = try coordinator.manager("settings", store: UserDefaultsStore(suiteName: suite))
        settings.register("1.0", options: .named("sync off")) { try $0.set(false, for: "syncEnabled") }
        settings.register("1.1", options: .named("sync interval", fingerprint: "60 s")) { try $0.set(60, for: "sync.interval") }
        settings.register("1.2", options: .named("theme")) { try $0.set("light", for: "theme") }
        if squash {
            settings.squash(from: "1.0", through: "1.1", options: .named("sync settings")) { defaults in
                try defaults.set(false, for: "syncEnabled")
                try defaults.set(60, for: "sync.interval")
                try defaults.set(true, for: "squashed")
                if failing { throw TestFailure(message: "squash failed after its writes") }
            }
        }
        return coordinator
    }

    func record() throws -> MigrationRecord? { try UserDefaultsStore(suiteName: suite).readRecords()["settings"] }
    func defaults() throws -> Preferences { try UserDefaultsStore(suiteName: suite).read() }

    @Test func aFreshSuiteRunsTheSquashAndRecordsEachReplacedMigrationWithItsNameAndFingerprint() throws {
        let report = try release("1.2").run()
        #expect(report.steps.map(\.id.description) == ["settings:squash@1.1", "settings@1.2"])
        let defaults = try defaults()
        #expect(defaults.value("syncEnabled", as: Bool.self) == false && defaults.value("sync.interval", as: Int.self) == 60)
        #expect(defaults.value("squashed", as: Bool.self) == true && defaults.string("theme") == "light")
        let record = try #require(try record())
        #expect(record.applied.map(\.version) == ["1.0", "1.1", "1.2"])
        #expect(record.applied.map(\.name) == ["sync off", "sync interval", "theme"])
        #expect(record.appliedMigration("1.1")?.fingerprint == MigrationFingerprint(of: "60 s"))
    }

    @Test func aSuitePartWayRunsTheReplacedMigrationsLeft() throws {
        #expect(try release("1.0", squash: false).run().succeeded)
        let report = try release("1.2").run()
        #expect(report.steps.map(\.id.description) == ["settings@1.1", "settings@1.2"])
        #expect(try defaults().value("squashed", as: Bool.self) == nil)
        #expect(try record()?.applied.map(\.version) == ["1.0", "1.1", "1.2"])
    }

    @Test func aSuitePastTheRangeRunsNothingOfIt() throws {
        #expect(try release("1.1", squash: false).run().succeeded)
        let report = try release("1.2").run()
        #expect(report.steps.map(\.id.description) == ["settings@1.2"])
        #expect(try defaults().value("squashed", as: Bool.self) == nil)
    }

    @Test func aSquashThatThrowsWritesNeitherItsKeysNorAnyRecord() throws {
        let report = try runReport(of: release("1.2", failing: true))
        #expect(report.steps.map(\.id.description) == ["settings:squash@1.1", "settings@1.2"])
        #expect(report.steps.last?.outcome == .skipped(because: PlannedStep.ID(manager: "settings", action: .squash, version: "1.1")))
        #expect(!report.succeeded)
        #expect(try record() == nil)
        #expect(try defaults().value("squashed", as: Bool.self) == nil)
        #expect(try defaults().value("syncEnabled", as: Bool.self) == nil)
        // The next launch takes the squash again, from nothing.
        #expect(try release("1.2").run().steps.map(\.id.description) == ["settings:squash@1.1", "settings@1.2"])
    }
}
