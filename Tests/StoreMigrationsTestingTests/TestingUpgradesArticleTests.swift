import Foundation
import StoreMigrations
import StoreMigrationsSQLite
import StoreMigrationsSQLiteTesting
import StoreMigrationsTesting
import Testing
import TestSupport

// The samples of the DocC article Testing Upgrades (and of the README's section, which uses the
// same calls), as written there. A sample that changes in the article changes here too.

enum NotesStores {
    static func coordinator(in folder: URL, forgetsBodyDefault: Bool = false, squashes: Bool = true) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let prefsFile = folder.appendingPathComponent("Preferences.json")
        let prefs = try coordinator.manager("preferences", store: PreferencesStore(url: prefsFile))
        let library = try coordinator.manager(
            "library", store: SQLiteStore(url: folder.appendingPathComponent("Notes.sqlite")))

        prefs.register("1.1") { defaults in
            try defaults.renameKey("sortOrder", to: "notes.sortOrder")
        }
        library.register("1.0") { db in
            try db.execute("""
                CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT DEFAULT '')
                """)
        }
        library.register("1.1") { db in
            try db.execute("ALTER TABLE note ADD COLUMN created_at TEXT")
        }
        if squashes {
            library.squash(from: "1.0", through: "1.1") { db in
                try db.execute("""
                    CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT DEFAULT '',
                        created_at TEXT)
                    """)
            }
        }
        library.register("2.0") { db in
            // The article's failure: a rebuild for users who have notes that forgets a default.
            if forgetsBodyDefault, try db.scalar("SELECT count(*) FROM note", as: Int.self) ?? 0 > 0 {
                try db.execute("""
                    CREATE TABLE new_note(id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT, created_at TEXT,
                        pinned INTEGER NOT NULL DEFAULT 0);
                    INSERT INTO new_note(id, title, body, created_at) SELECT id, title, body, created_at FROM note;
                    DROP TABLE note;
                    ALTER TABLE new_note RENAME TO note;
                    """)
            } else {
                try db.execute("ALTER TABLE note ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0")
            }
        }
        return coordinator
    }
}

@Suite struct TestingUpgradesArticleTests {
    let folder: TemporaryFolder
    var fixtures: URL { folder.file("Fixtures") }

    init() throws {
        folder = try TemporaryFolder()
    }

    func makeTester(forgetsBodyDefault: Bool = false) -> UpgradeTester {
        var tester = UpgradeTester(kinds: [.sqlite]) { location in
            try NotesStores.coordinator(in: location.directory, forgetsBodyDefault: forgetsBodyDefault)
        }
        tester.invariants = [
            .on("library", as: SQLiteStore.self, "every note keeps its title") { before, after in
                let titles = "SELECT id, title FROM note ORDER BY id"
                let old = try before.read { db in try db.rows(titles).map { "\($0)" } }
                let new = try after.read { db in try db.rows(titles).map { "\($0)" } }
                if old == new { return [] }
                return ["table note: \(old.count) titles in the fixture, \(new.count) upgraded"]
            },
        ]
        tester.temporaryDirectory = folder.url
        return tester
    }

    func seed1_1(_ tester: UpgradeTester) throws -> UpgradeFixture {
        try tester.seed(at: "1.1", into: fixtures.appendingPathComponent("notes-1.1")) { stores in
            try stores.editPreferences("preferences") { defaults in
                try defaults.set("title", for: "notes.sortOrder")
            }
            try stores.store("library", as: SQLiteStore.self).write { db in
                try db.execute("INSERT INTO note(title, created_at) VALUES ('Drafts', '2024-05-01')")
            }
        }
    }

    @Test func theArticlesFixturesUpgradeAndTheirFolderIsAsShown() throws {
        let tester = makeTester()
        _ = try seed1_1(tester)
        var replayed = UpgradeTester(kinds: [.sqlite]) { location in
            try NotesStores.coordinator(in: location.directory, squashes: false)
        }
        replayed.temporaryDirectory = folder.url
        try replayed.seed(at: "1.0", into: fixtures.appendingPathComponent("notes-1.0")) { _ in }
        for version in ["1.0", "1.1"] {
            let report = try makeTester().check(UpgradeFixture(folder: fixtures.appendingPathComponent("notes-\(version)")))
            #expect(report.invariantsChecked == 1)
        }
        let names = try FileManager.default.subpathsOfDirectory(atPath: fixtures.appendingPathComponent("notes-1.1").path).sorted()
        #expect(names == ["fixture.json", "library", "library/Notes.sqlite", "preferences", "preferences/Preferences.json"])
    }

    @Test func theArticlesFailureReadsAsShown() throws {
        let tester = makeTester(forgetsBodyDefault: true)
        let failure = try #require(throws: UpgradeCheckFailure.self) { try tester.check(seed1_1(tester)) }
        #expect(failure.description == """
            upgrading library from 1.1 to 2.0 does not end where a fresh install of 2.0 does (1 difference); \
            fix the migrations of library after 1.1 so that an upgraded store matches a fresh install
            --- fresh install of 2.0
            +++ upgraded from 1.1
            @@ library, upgraded from 1.1: table note, column body @@
            - "body" TEXT DEFAULT ''
            + "body" TEXT
            """)
    }

    @Test func aNewInstallThroughTheSquashMatchesTheHistory() throws {
        try makeTester().checkFreshInstall("through the squash") { location in
            try NotesStores.coordinator(in: location.directory, squashes: false)
        }
    }

    @Test func aVersionInsideASquashedRangeIsSeededByTheReplayedHistoryNotTheSquash() throws {
        let folder = fixtures.appendingPathComponent("notes-1.0")
        let error = try #require(throws: UpgradeTestingError.self) { try makeTester().seed(at: "1.0", into: folder) { _ in } }
        #expect(error.reason == .seededThroughSquash(version: "1.0", squash: "library:squash@1.1"))
        #expect(error.description.hasPrefix("seeding the store of library at 1.0 ran the squashed migration library:squash@1.1"))
        #expect(!FileManager.default.fileExists(atPath: folder.path))

        var replayed = UpgradeTester(kinds: [.sqlite]) { location in
            try NotesStores.coordinator(in: location.directory, squashes: false)
        }
        replayed.temporaryDirectory = self.folder.url
        let fixture = try replayed.seed(at: "1.0", into: folder) { _ in }
        let database = SQLiteStore(url: fixture.folder.appendingPathComponent("library/Notes.sqlite"))
        #expect(try database.readRecords()["library"]?.appliedVersions == ["1.0"])
        let report = try makeTester().check(fixture)
        #expect(report.upgrade.steps.map(\.id.description).filter { $0.hasPrefix("library") } == ["library@1.1", "library@2.0"])
    }

    /// Issue 28, item 7: the article says where `fixtures` comes from and how the test target
    /// keeps SwiftPM from warning about the fixture files, and its expression finds them.
    @Test func theArticleShowsWhereFixturesComeFromAndExcludesThem() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let article = try String(
            contentsOf: root.appendingPathComponent("Sources/StoreMigrationsTesting/StoreMigrationsTesting.docc/TestingUpgrades.md"),
            encoding: .utf8)
        #expect(article.contains(#".testTarget(name: "NotesTests", dependencies: [ … ], exclude: ["Fixtures"]),"#))
        let line = #"let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()"# + "\n"
            + #"    .appendingPathComponent("Fixtures")"#
        #expect(article.contains(line))
        // The same expression, here: the folder beside this test file.
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        #expect(fixtures.deletingLastPathComponent().lastPathComponent == "StoreMigrationsTestingTests")
        #expect(article.range(of: line)!.lowerBound < article.range(of: #"fixtures.appendingPathComponent("notes-1.1")"#)!.lowerBound,
            "defined before its first use")
    }
}
