import Foundation
import Testing
@testable import StoreMigrations

/// The README's quick start, as written there, on real files.
@Suite struct ReadmeTests {
    @Test func quickStartRuns() throws {
        let folder = try TemporaryFolder()
        let prefsURL = folder.file("prefs.json"), dbURL = folder.file("library.sqlite"), cacheURL = folder.file("thumbnails")
        try Data(#"{"showHelp": true}"#.utf8).write(to: prefsURL)
        try SQLiteStore(url: dbURL).write { db in try db.execute("CREATE TABLE event(id INTEGER PRIMARY KEY)") }

        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let prefs = try coordinator.manager("preferences", store: PreferencesStore(url: prefsURL))
        let library = try coordinator.manager("library", store: SQLiteStore(url: dbURL))
        let thumbs = try coordinator.manager("thumbnails", store: CacheStore(directory: cacheURL))

        prefs.register("1.1") { defaults in try defaults.renameKey("showHelp", to: "onboarding.showHelp") }
        library.register("1.1") { db in try db.addColumn("guid", type: .text, to: "event") }
        library.register("2.0", dependsOn: [prefs.migration("1.1")]) { _ in }
        thumbs.register("2.0") { cache in try cache.removeAll() }

        let plan = try coordinator.plan()
        #expect(plan.steps.map(\.id.description) == ["preferences@1.1", "library@1.1", "thumbnails@2.0", "library@2.0"])
        let report = try coordinator.run()
        #expect(report.succeeded && report.didRunAnything)
        #expect(try PreferencesStore(url: prefsURL).read().bool("onboarding.showHelp") == true)
        #expect(try SQLiteStore(url: dbURL).read { db in try db.tableInfo("event").map(\.name) } == ["id", "guid"])
    }
}
