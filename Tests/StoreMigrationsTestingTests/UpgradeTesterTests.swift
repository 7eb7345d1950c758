import Foundation
import StoreMigrations
import StoreMigrationsSQLite
import StoreMigrationsSQLiteTesting
import StoreMigrationsTesting
import Testing
import TestSupport

/// The kit on a four-store app: fixtures of three versions upgrade cleanly, and each kind of
/// wrong migration is caught with a diff that names the store, the table or key, and the version.
@Suite struct UpgradeTesterTests {
    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder()
    }

    func tester(_ bug: FourStoreApp.Bug = .none) -> UpgradeTester {
        var tester = FourStoreApp.tester(bug)
        tester.temporaryDirectory = folder.url
        return tester
    }

    @Test func fixturesOfThreeVersionsOfAFourStoreAppUpgradeCleanly() throws {
        let tester = tester()
        for version: Version in ["1.0", "1.1", "1.2"] {
            let fixture = try FourStoreApp.seed(tester, at: version, into: folder.file("fixtures/\(version)"))
            let report = try tester.check(UpgradeFixture(folder: fixture.folder))
            #expect(report.upgradedFrom == version)
            #expect(report.stores == ["preferences", "settings", "library", "thumbnails"])
            #expect(report.upgrade.managers.map(\.levelAfter) == ["2.0", "1.2", "2.0", "2.0"])
        }
        // Every location the tester made was removed with its stores.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.file("store-migrations-upgrades").path) == [])
    }

    @Test func aFixtureIsAFolderWithAManifestAndAFolderPerStore() throws {
        let fixture = try FourStoreApp.seed(tester(), at: "1.1", into: folder.file("notes-1.1"))
        let names = try FileManager.default.contentsOfDirectory(atPath: fixture.folder.path).sorted()
        #expect(names == ["fixture.json", "library", "preferences", "settings", "thumbnails"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.folder.appendingPathComponent("library").path) == ["Library.sqlite"])
        let reopened = try UpgradeFixture(folder: fixture.folder)
        #expect(reopened.appVersion == "1.1")
        #expect(reopened.stores.map(\.kind) == ["preferences-file", "user-defaults", "sqlite", "cache-directory"])
        // The database was captured at 1.1 by a targeted run, with the test's rows.
        let database = SQLiteStore(url: fixture.folder.appendingPathComponent("library/Library.sqlite"))
        #expect(try database.readRecords()["library"]?.appliedVersions == ["1.0", "1.1"])
        #expect(try database.read { db in try db.scalar("SELECT count(*) FROM note", as: Int.self) } == 3)
    }

    @Test func aDroppedDefaultIsCaughtWithADiffNamingTheColumn() throws {
        let tester = tester(.dropsDefault)
        let fixture = try FourStoreApp.seed(tester, at: "1.2", into: folder.file("notes-1.2"))
        let failure = try #require(throws: UpgradeCheckFailure.self) { try tester.check(fixture) }
        #expect(failure.differences == [
            UpgradeDifference(
                store: "library", upgradedFrom: "1.2", kind: .schema, location: "table note, column body",
                fresh: "\"body\" TEXT DEFAULT ''", upgraded: "\"body\" TEXT"),
        ])
        #expect(failure.description == """
            upgrading library from 1.2 to 2.0 does not end where a fresh install of 2.0 does (1 difference); \
            fix the migrations of library after 1.2 so that an upgraded store matches a fresh install
            --- fresh install of 2.0
            +++ upgraded from 1.2
            @@ library, upgraded from 1.2: table note, column body @@
            - "body" TEXT DEFAULT ''
            + "body" TEXT
            """)
    }

    @Test func aForgottenColumnIsCaughtWithADiffNamingIt() throws {
        let tester = tester(.forgetsColumn)
        let fixture = try FourStoreApp.seed(tester, at: "1.1", into: folder.file("notes-1.1"))
        let failure = try #require(throws: UpgradeCheckFailure.self) { try tester.check(fixture) }
        #expect(failure.differences == [
            UpgradeDifference(
                store: "library", upgradedFrom: "1.1", kind: .schema, location: "table note, order of columns",
                fresh: "id, title, body, created_at, pinned", upgraded: "id, title, body, created_at"),
            UpgradeDifference(
                store: "library", upgradedFrom: "1.1", kind: .schema, location: "table note, column pinned",
                fresh: "\"pinned\" INTEGER NOT NULL DEFAULT 0", upgraded: nil),
        ])
        #expect(failure.description.contains("- \"pinned\" INTEGER NOT NULL DEFAULT 0\n+ (absent after the upgrade)"))
    }

    @Test func columnsInAnotherOrderThanAFreshInstallsAreCaughtWithADiffNamingTheTable() throws {
        let tester = tester(.reordersColumns)
        let fixture = try FourStoreApp.seed(tester, at: "1.2", into: folder.file("notes-1.2"))
        let failure = try #require(throws: UpgradeCheckFailure.self) { try tester.check(fixture) }
        #expect(failure.differences == [
            UpgradeDifference(
                store: "library", upgradedFrom: "1.2", kind: .schema, location: "table note, order of columns",
                fresh: "id, title, body, created_at, pinned", upgraded: "id, pinned, title, body, created_at"),
        ])
        #expect(failure.description == """
            upgrading library from 1.2 to 2.0 does not end where a fresh install of 2.0 does (1 difference); \
            fix the migrations of library after 1.2 so that an upgraded store matches a fresh install
            --- fresh install of 2.0
            +++ upgraded from 1.2
            @@ library, upgraded from 1.2: table note, order of columns @@
            - id, title, body, created_at, pinned
            + id, pinned, title, body, created_at
            """)
    }

    @Test func anAppThatNamesItsColumnsEverywhereMayLeaveTheirOrderOut() throws {
        var tester = UpgradeTester(kinds: [.sqlite(comparesColumnOrder: false)]) { location in
            try FourStoreApp.coordinator(at: location, bug: .reordersColumns)
        }
        tester.temporaryDirectory = folder.url
        let fixture = try FourStoreApp.seed(tester, at: "1.2", into: folder.file("notes-1.2"))
        let report = try tester.check(fixture)
        #expect(report.stores == ["preferences", "settings", "library", "thumbnails"])
        // The columns are still compared by name: a forgotten one is caught without the order.
        var forgetting = UpgradeTester(kinds: [.sqlite(comparesColumnOrder: false)]) { location in
            try FourStoreApp.coordinator(at: location, bug: .forgetsColumn)
        }
        forgetting.temporaryDirectory = folder.url
        let failure = try #require(throws: UpgradeCheckFailure.self) {
            try forgetting.check(FourStoreApp.seed(forgetting, at: "1.2", into: folder.file("forgetting-1.2")))
        }
        #expect(failure.differences.map(\.location) == ["table note, column pinned"])
    }

    @Test func aLostPreferenceKeyIsCaughtByTheKeysAndByAnInvariant() throws {
        var tester = tester(.losesPreferenceKey)
        tester.invariants.append(.on("preferences", as: PreferencesStore.self, "the sort order survives its key's rename") { before, after in
            let old = try before.read().value("sortOrder", as: String.self)
            let new = try after.read().value("notes.sortOrder", as: String.self)
            guard let old, old != new else { return [] }
            return ["key notes.sortOrder is \(new ?? "missing"); the fixture's sortOrder was \(old)"]
        })
        let fixture = try FourStoreApp.seed(tester, at: "1.0", into: folder.file("notes-1.0"))
        let failure = try #require(throws: UpgradeCheckFailure.self) { try tester.check(fixture) }
        #expect(failure.differences.map(\.kind) == [.keys, .invariant])
        #expect(failure.differences.first == UpgradeDifference(
            store: "preferences", upgradedFrom: "1.0", kind: .keys, location: "key notes.sortOrder",
            fresh: "a string", upgraded: nil))
        #expect(failure.stores == ["preferences"])
        #expect(failure.description == """
            upgrading preferences from 1.0 to 2.0 does not end where a fresh install of 2.0 does (2 differences); \
            fix the migrations of preferences after 1.0 so that an upgraded store matches a fresh install
            --- fresh install of 2.0
            +++ upgraded from 1.0
            @@ preferences, upgraded from 1.0: key notes.sortOrder @@
            - a string
            + (absent after the upgrade)
            @@ preferences, upgraded from 1.0: the sort order survives its key's rename @@
            ! invariant broken: key notes.sortOrder is missing; the fixture's sortOrder was title
            """)
    }

    @Test func theSameInvariantHoldsWhenTheMigrationIsRight() throws {
        var tester = tester()
        tester.invariants.append(.on("preferences", as: PreferencesStore.self, "the sort order survives its key's rename") { before, after in
            try before.read()["sortOrder"] == after.read()["notes.sortOrder"] ? [] : ["sort order lost"]
        })
        let report = try tester.check(FourStoreApp.seed(tester, at: "1.0", into: folder.file("notes-1.0")))
        #expect(report.invariantsChecked == 1)
    }

    @Test func migrationsUnderABaselineCountAsAppliedAndAreExplained() throws {
        var tester = UpgradeTester(kinds: [.sqlite]) { location in
            let coordinator = MigrationCoordinator(appVersion: "2.0")
            let library = try coordinator.manager("library", store: SQLiteStore(url: location.url("Library.sqlite")))
            library.register("1.0") { db in try db.execute("CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT)") }
            library.register("1.1") { db in try db.execute("CREATE INDEX note_title ON note(title)") }
            library.register("2.0") { db in try db.execute("ALTER TABLE note ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0") }
            return coordinator
        }
        tester.temporaryDirectory = folder.url
        // An app that adopted the library at 1.1: its own 1.1 schema, and a baseline mark.
        let location = try tester.makeLocation()
        defer { try? tester.discard(location) }
        let adopting = MigrationCoordinator(appVersion: "1.1")
        let library = try adopting.manager("library", store: SQLiteStore(url: location.url("Library.sqlite")))
        try library.store.write { db in
            try db.execute("CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT); CREATE INDEX note_title ON note(title)")
        }
        #expect(try library.baseline(at: "1.1"))
        let fixture = try tester.capture(location, appVersion: "1.1", into: folder.file("adopted-1.1"))

        let report = try tester.check(fixture)
        #expect(report.upgrade.steps.map { "\($0.id)" } == ["library@2.0"])
        #expect(report.baselines == ["library: 1.0, 1.1 by the baseline 1.1"])
        #expect(report.description == """
            upgrade from 1.1 to 2.0 matches a fresh install: 1 store (library), 0 invariants held
              library: 1.0, 1.1 by the baseline 1.1
            """)
    }

    @Test func seedingOnSQLiteBuildsTheStoreAtTheVersionThenUpgradesTheTestsRows() throws {
        let tester = tester()
        let fixture = try tester.seed(at: "1.1", into: folder.file("seeded")) { stores in
            #expect(stores.version == "1.1")
            try stores.store("library", as: SQLiteStore.self).write { db in
                // 1.1's schema, from the registered migrations: `created_at`, no `tag` yet.
                #expect(try db.tableInfo("note").map(\.name) == ["id", "title", "body", "created_at"])
                #expect(try !db.tableExists("tag"))
                try db.execute("INSERT INTO note(id, title, created_at) VALUES (7, 'Drafts', '2023-05-01')")
            }
        }
        try tester.check(fixture)
        let (location, coordinator) = try tester.restore(fixture)
        defer { try? tester.discard(location) }
        try coordinator.run()
        _ = coordinator
        let row = try SQLiteStore(url: location.url("Library.sqlite")).read { db in try db.row("SELECT title, created_at, pinned FROM note WHERE id = 7") }
        #expect(row?.description == "[title: \"Drafts\", created_at: \"2023-05-01\", pinned: 0]")
    }

    @Test func seedingOnThePreferencesStoreKeepsTheUsersValueThroughTheRename() throws {
        let tester = tester()
        let fixture = try tester.seed(at: "1.0", into: folder.file("seeded")) { stores in
            #expect(try stores.store("preferences", as: PreferencesStore.self).readRecords().isEmpty)
            try stores.editPreferences("preferences") { defaults in try defaults.set("title", for: "sortOrder") }
            #expect(try stores.store("settings", as: UserDefaultsStore.self).read()["syncEnabled"] == false)
        }
        let (location, coordinator) = try tester.restore(fixture)
        defer { try? tester.discard(location) }
        try coordinator.run()
        let store = PreferencesStore(url: location.url("Preferences.json"))
        #expect(try store.readRecords().keys.sorted() == ["preferences"])
        let preferences = try store.read()
        #expect(preferences["notes.sortOrder"] == "title")
        #expect(preferences["sortOrder"] == nil)
        #expect(try UserDefaultsStore(suiteName: location.suiteName("settings")).read()["sync.interval"] == 60)
    }

    @Test func aFixtureKindTheTesterWasNotGivenIsAnErrorNamingTheStore() throws {
        let fixture = try FourStoreApp.seed(tester(), at: "1.2", into: folder.file("notes-1.2"))
        var withoutSQLite = UpgradeTester { location in try FourStoreApp.coordinator(at: location, bug: .none) }
        withoutSQLite.temporaryDirectory = folder.url
        let error = try #require(throws: UpgradeTestingError.self) { try withoutSQLite.check(fixture) }
        #expect(error == UpgradeTestingError(store: "library", reason: .unknownKind(kind: "sqlite")))
        #expect(error.description == "the fixture's store library was captured by the kind \"sqlite\", which the tester was not given; "
            + "pass it to UpgradeTester(kinds:)")
    }

    @Test func aStoreTheAppNoLongerHasIsAnErrorNamingIt() throws {
        let fixture = try FourStoreApp.seed(tester(), at: "1.2", into: folder.file("notes-1.2"))
        var withoutThumbnails = UpgradeTester(kinds: [.sqlite]) { location in
            let coordinator = MigrationCoordinator(appVersion: "2.0")
            _ = try coordinator.manager("preferences", store: PreferencesStore(url: location.url("Preferences.json")))
            return coordinator
        }
        withoutThumbnails.temporaryDirectory = folder.url
        let error = try #require(throws: UpgradeTestingError.self) { try withoutThumbnails.check(fixture) }
        #expect(error == UpgradeTestingError(store: "settings", reason: .storeNotInCoordinator))
    }

    @Test func anInMemoryStoreRoundTripsThroughAFixture() throws {
        var tester = UpgradeTester(kinds: [InMemoryKind<[String: Int]>()]) { _ in
            let coordinator = MigrationCoordinator(appVersion: "2.0")
            let counts = try coordinator.manager("counts", store: InMemoryStore<[String: Int]>([:], name: "counts"))
            counts.register("1.0") { value in value["notes"] = 0 }
            counts.register("2.0") { value in value["tags"] = 0 }
            return coordinator
        }
        tester.temporaryDirectory = folder.url
        let fixture = try tester.seed(at: "1.0", into: folder.file("memory")) { stores in
            try stores.store("counts", as: InMemoryStore<[String: Int]>.self).transaction { _, value in value["notes"] = 12 }
        }
        let (location, coordinator) = try tester.restore(fixture)
        defer { try? tester.discard(location) }
        try coordinator.run()
        let store = try #require(coordinator.registeredManagers.first?.store as? InMemoryStore<[String: Int]>)
        #expect(store.contents == ["notes": 12, "tags": 0])
        try tester.check(fixture)
    }
}
