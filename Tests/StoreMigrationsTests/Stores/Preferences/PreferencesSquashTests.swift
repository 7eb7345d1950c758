import Foundation
import Testing
import StoreMigrations
import TestSupport

/// Squashed migrations on a preferences file: the squashed body's keys and the records of every
/// replaced migration are written in one atomic replace, or not at all.
@Suite struct PreferencesSquashTests {
    let scratch: TemporaryFolder
    let url: URL

    init() throws {
        scratch = try TemporaryFolder()
        url = scratch.file("settings.json")
    }

    func release(_ appVersion: Version, squash: Bool = true, failing: Bool = false) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: appVersion)
        let settings = try coordinator.manager("settings", store: PreferencesStore(url: url))
        settings.register("1.0", options: .named("theme")) { try $0.set("light", for: "theme") }
        settings.register("1.1", options: .named("font")) { try $0.set(12, for: "font") }
        if squash {
            settings.squash(from: "1.0", through: "1.1") { preferences in
                try preferences.set("light", for: "theme")
                try preferences.set(12, for: "font")
                try preferences.set(true, for: "squashed")
                if failing { throw TestFailure(message: "squash failed after its writes") }
            }
        }
        return coordinator
    }

    func record() throws -> MigrationRecord? { try PreferencesStore(url: url).readRecords()["settings"] }

    @Test func aFreshFileRunsTheSquashAndRecordsEachReplacedMigration() throws {
        let report = try release("1.1").run()
        #expect(report.steps.map(\.id.description) == ["settings:squash@1.1"])
        let preferences = try PreferencesStore(url: url).read()
        #expect(preferences.string("theme") == "light" && preferences.value("font", as: Int.self) == 12)
        #expect(preferences.value("squashed", as: Bool.self) == true)
        #expect(try record()?.applied.map(\.version) == ["1.0", "1.1"])
        #expect(try record()?.applied.map(\.name) == ["theme", "font"])
    }

    @Test func aSquashThatThrowsWritesNothing() throws {
        #expect(try !runReport(of: release("1.1", failing: true)).succeeded)
        #expect(try record() == nil)
        #expect(try PreferencesStore(url: url).read().value("squashed", as: Bool.self) == nil)
    }

    @Test func aFilePartWayRunsTheReplacedMigrations() throws {
        #expect(try release("1.0", squash: false).run().succeeded)
        let report = try release("1.1").run()
        #expect(report.steps.map(\.id.description) == ["settings@1.1"])
        #expect(try PreferencesStore(url: url).read().value("squashed", as: Bool.self) == nil)
        #expect(try record()?.applied.map(\.version) == ["1.0", "1.1"])
    }
}
