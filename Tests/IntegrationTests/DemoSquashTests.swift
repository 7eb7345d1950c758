import Foundation
import NotesApp
import StoreMigrations
import StoreMigrationsSQLite
import StoreMigrationsSQLiteTesting
import StoreMigrationsTesting
import Testing
import TestSupport

/// The demo's squash: a new install creates the 1.2 notes database at once, and ends where the
/// replayed history (1.0, 1.1, 1.1-1, 1.2) does, in each of the demo's stores (a preferences
/// file, a SQLite database, a cache directory); the 1.0 app's database is adopted at 1.0 by its
/// first-launch policy and still runs the originals.
@Suite struct DemoSquashTests {
    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder()
    }

    func tester() -> UpgradeTester {
        var tester = UpgradeTester(kinds: [.sqlite]) { location in
            try NotesMigrations.coordinator(for: LegacyNotesApp(directory: location.directory))
        }
        tester.temporaryDirectory = folder.url
        tester.invariants = [
            .on("library", as: SQLiteStore.self, "the notes database ends at 2.0's declared schema") { _, after in
                try after.read { db in try db.schemaChanges(to: NotesSchema.v2_0) }.map { "change left: \($0)" }
            },
        ]
        return tester
    }

    @Test func aNewInstallThroughTheSquashEqualsTheReplayedHistoryInEveryStore() throws {
        let report = try tester().checkFreshInstall("through the squash") { location in
            try NotesMigrations.coordinator(for: LegacyNotesApp(directory: location.directory), squashes: false)
        }
        #expect(report.stores == ["preferences", "library", "thumbnails"])
        #expect(report.invariantsChecked == 1)
        #expect(report.install.steps.map(\.id.description).filter { $0.hasPrefix("library") } == ["library:squash@1.2", "library@2.0"])
        #expect(report.reference.steps.map(\.id.description).filter { $0.hasPrefix("library") } == [
            "library@1.0", "library@1.1", "library@1.1-1", "library@1.2", "library@2.0",
        ])
    }

    @Test func aSquashThatStopsShortOfTheRangeIsCaughtOnTheDemosStores() throws {
        var tester = UpgradeTester(kinds: [.sqlite]) { location in
            let coordinator = try NotesMigrations.coordinator(for: LegacyNotesApp(directory: location.directory), squashes: false)
            // A squash that creates the 1.1 tables and forgets 1.2's rename.
            let library = try #require(coordinator.registeredManagers.first { $0.name == "library" }?.store as? SQLiteStore)
            let squashed = try coordinator.manager("library-copy", store: SQLiteStore(url: library.url.appendingPathExtension("copy")))
            squashed.register("1.0") { db in try db.execute(LegacyNotesApp.databaseSchema) }
            squashed.register("1.2") { db in try db.migrateSchema(to: NotesSchema.v1_2) }
            squashed.squash(from: "1.0", through: "1.2") { db in try db.migrateSchema(to: NotesSchema.v1_1) }
            return coordinator
        }
        tester.temporaryDirectory = folder.url
        let failure = try #require(throws: FreshInstallCheckFailure.self) {
            try tester.checkFreshInstall { location in
                let coordinator = try NotesMigrations.coordinator(for: LegacyNotesApp(directory: location.directory), squashes: false)
                let library = try #require(coordinator.registeredManagers.first { $0.name == "library" }?.store as? SQLiteStore)
                let replayed = try coordinator.manager("library-copy", store: SQLiteStore(url: library.url.appendingPathExtension("copy")))
                replayed.register("1.0") { db in try db.execute(LegacyNotesApp.databaseSchema) }
                replayed.register("1.2") { db in try db.migrateSchema(to: NotesSchema.v1_2) }
                return coordinator
            }
        }
        #expect(failure.stores == ["library-copy"])
        #expect(failure.differences.contains { $0.location == "table note, column created_at" && $0.installed == nil })
        #expect(failure.steps == ["library-copy as shipped: library-copy:squash@1.2; replayed: library-copy@1.0, library-copy@1.2"])
    }

    @Test func the1_0StoresAreAdoptedAt1_0AndRunTheOriginalsWhileNeitherPlanNorANewInstallWritesUntilItRuns() throws {
        let legacy = LegacyNotesApp(directory: folder.file("legacy"))
        try legacy.create(notes: 12) { _ in }
        let coordinator = try NotesMigrations.coordinator(for: legacy)
        let plan = try coordinator.plan()
        #expect(plan.managers.first { $0.name == "library" }?.firstLaunch == .adopt(at: "1.0"))
        #expect(try SQLiteStore(url: legacy.databaseURL).readRecords()["library"] == nil)
        let report = try coordinator.run()
        #expect(report.steps.map(\.id.description).filter { $0.hasPrefix("library") } == [
            "library:baseline@1.0", "library@1.1", "library@1.1-1", "library@1.2", "library@2.0",
        ])
        #expect(try SQLiteStore(url: legacy.databaseURL).readRecords()["library"]?.baseline == "1.0")
        #expect(try SQLiteStore(url: legacy.databaseURL).read { db in try db.scalar("SELECT count(*) FROM note", as: Int.self) } == 12)

        let fresh = LegacyNotesApp(directory: folder.file("fresh"))
        try FileManager.default.createDirectory(at: fresh.directory, withIntermediateDirectories: true)
        _ = try NotesMigrations.coordinator(for: fresh)
        #expect(try FileManager.default.contentsOfDirectory(atPath: fresh.directory.path) == [])
    }
}
