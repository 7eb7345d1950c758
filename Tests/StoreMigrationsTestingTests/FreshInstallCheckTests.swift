import Foundation
import StoreMigrations
import StoreMigrationsSQLite
import StoreMigrationsSQLiteTesting
import StoreMigrationsTesting
import Testing
import TestSupport

/// `checkFreshInstall`: an app whose four stores (a preferences file, a `UserDefaults` suite, a
/// SQLite library, a thumbnail cache) each squash their history; installed through the squashes
/// and replayed, both must end alike. Each `Flaw` makes one squash, or one migration, differ.
@Suite struct FreshInstallCheckTests {
    enum Flaw: Sendable {
        case none
        /// The library's squash forgets the index 1.1 creates.
        case forgetsIndex
        /// The library's squash forgets the row 1.1 inserts.
        case forgetsRow
        /// The preferences' squash writes another sort order than 1.0 does.
        case writesOtherValue
        /// The settings' squash forgets the key 1.1 writes.
        case forgetsKey
        /// The cache's squash forgets the file 1.0 writes.
        case forgetsFile
        /// The release edited the library's 1.1 (another fingerprint) after the reference's.
        case editedMigration
    }

    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder()
    }

    static func coordinator(at location: StoreLocation, squashes: Bool, flaw: Flaw = .none) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let preferences = try coordinator.manager("preferences", store: PreferencesStore(url: location.url("Preferences.json")))
        let settings = try coordinator.manager("settings", store: UserDefaultsStore(suiteName: location.suiteName("settings")))
        let library = try coordinator.manager("library", store: SQLiteStore(url: location.url("Library.sqlite")))
        let thumbnails = try coordinator.manager("thumbnails", store: CacheStore(directory: location.url("Thumbnails")))

        preferences.register("1.0", options: .named("sort order")) { try $0.set("date", for: "sortOrder") }
        preferences.register("1.1", options: .named("group sort keys")) { try $0.renameKey("sortOrder", to: "notes.sortOrder") }
        preferences.register("2.0") { try $0.set(true, for: "notes.showCategories") }
        settings.register("1.0", options: .named("sync off")) { try $0.set(false, for: "syncEnabled") }
        settings.register("1.1", options: .named("sync interval")) { try $0.set(60, for: "sync.interval") }
        library.register("1.0", options: .named("notes", fingerprint: "note table")) { db in
            try db.execute("CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT NOT NULL)")
        }
        let folders = flaw == .editedMigration && squashes ? "folder table, edited" : "folder table"
        library.register("1.1", options: .named("folders", fingerprint: folders)) { db in
            try db.execute("""
                CREATE TABLE folder(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
                INSERT INTO folder(name) VALUES ('Inbox');
                CREATE INDEX note_title ON note(title);
                """)
        }
        library.register("2.0", dependsOn: [preferences.migration("1.1")]) { db in
            try db.execute("ALTER TABLE note ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0")
        }
        thumbnails.register("1.0", options: .named("placeholder")) { cache in
            try Data([1, 2, 3]).write(to: cache.fileURL(for: "placeholder.png"))
        }
        thumbnails.register("1.1") { cache in try Data("{}".utf8).write(to: cache.fileURL(for: "index.json")) }
        guard squashes else { return coordinator }

        preferences.squash(from: "1.0", through: "1.1") { preferences in
            try preferences.set(flaw == .writesOtherValue ? "title" : "date", for: "notes.sortOrder")
        }
        settings.squash(from: "1.0", through: "1.1") { defaults in
            try defaults.set(false, for: "syncEnabled")
            if flaw != .forgetsKey { try defaults.set(60, for: "sync.interval") }
        }
        library.squash(from: "1.0", through: "1.1") { db in
            try db.execute("""
                CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT NOT NULL);
                CREATE TABLE folder(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
                """)
            if flaw != .forgetsRow { try db.execute("INSERT INTO folder(name) VALUES ('Inbox')") }
            if flaw != .forgetsIndex { try db.execute("CREATE INDEX note_title ON note(title)") }
        }
        thumbnails.squash(from: "1.0", through: "1.1") { cache in
            if flaw != .forgetsFile { try Data([1, 2, 3]).write(to: cache.fileURL(for: "placeholder.png")) }
            try Data("{}".utf8).write(to: cache.fileURL(for: "index.json"))
        }
        return coordinator
    }

    func tester(_ flaw: Flaw = .none) -> UpgradeTester {
        var tester = UpgradeTester(kinds: [.sqlite]) { location in try Self.coordinator(at: location, squashes: true, flaw: flaw) }
        tester.temporaryDirectory = folder.url
        return tester
    }

    func check(_ flaw: Flaw) throws -> FreshInstallCheckFailure {
        try #require(throws: FreshInstallCheckFailure.self) {
            try tester(flaw).checkFreshInstall("through the squashes") { location in
                try Self.coordinator(at: location, squashes: false, flaw: flaw)
            }
        }
    }

    @Test func aSquashedFreshInstallOfEveryKindEqualsTheReplayedOne() throws {
        var tester = tester()
        tester.invariants = [
            .on("library", as: SQLiteStore.self, "the inbox folder exists") { _, after in
                try after.read { db in try db.scalar("SELECT count(*) FROM folder WHERE name = 'Inbox'", as: Int.self) } == 1
                    ? [] : ["table folder has no Inbox"]
            },
        ]
        let report = try tester.checkFreshInstall { location in try Self.coordinator(at: location, squashes: false) }
        #expect(report.stores == ["preferences", "settings", "library", "thumbnails"])
        #expect(report.invariantsChecked == 1)
        // Each store took its squash; the reference replayed every migration.
        #expect(report.install.steps.map(\.id.description).sorted() == [
            "library:squash@1.1", "library@2.0", "preferences:squash@1.1", "preferences@2.0", "settings:squash@1.1",
            "thumbnails:squash@1.1",
        ])
        #expect(report.reference.steps.count == 10)
        #expect(report.description.hasPrefix("a fresh install of 2.0 as shipped (6 steps) ends where one replayed does (10 steps)"))
        // Every location the check made was removed, suites and files alike.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.file("store-migrations-upgrades").path) == [])
    }

    @Test func aSquashThatForgetsAnIndexIsADiffNamingTheStoreTheIndexAndThePath() throws {
        let failure = try check(.forgetsIndex)
        #expect(failure.differences == [
            FreshInstallCheckFailure.Difference(
                store: "library", kind: .schema, location: "index note_title", reference: "on note: index note_title (title)", installed: nil,
                path: "through the squashes"),
        ])
        #expect(failure.description == """
            a fresh install of 2.0 through the squashes does not end where one replayed does in library (1 difference); \
            fix library's squashed migration (or declared schema) to end where the migrations it replaces do
            library through the squashes: library:squash@1.1, library@2.0; replayed: library@1.0, library@1.1, library@2.0
            --- fresh install of 2.0, replayed
            +++ fresh install of 2.0, through the squashes
            @@ library, through the squashes: index note_title @@
            - on note: index note_title (title)
            + (absent through the squashes)
            """)
    }

    @Test func aSquashThatForgetsARowIsADiffNamingTheTableAndTheRow() throws {
        let failure = try check(.forgetsRow)
        #expect(failure.differences.map(\.kind) == [.content])
        #expect(failure.differences.map(\.location) == ["table folder, row id 1"])
        #expect(failure.differences.first?.reference == "[id: 1, name: \"Inbox\"]")
        #expect(failure.differences.first?.installed == nil)
    }

    @Test func preferenceValuesUserDefaultsKeysAndCacheFilesAreComparedToo() throws {
        let value = try check(.writesOtherValue)
        #expect(value.differences == [
            FreshInstallCheckFailure.Difference(
                store: "preferences", kind: .content, location: "key notes.sortOrder", reference: "a string \"date\"",
                installed: "a string \"title\"", path: "through the squashes"),
        ])
        let key = try check(.forgetsKey)
        #expect(key.stores == ["settings"])
        #expect(key.differences.map(\.location) == ["key sync.interval", "key sync.interval"])
        #expect(key.differences.map(\.kind) == [.keys, .content])
        let file = try check(.forgetsFile)
        #expect(file.differences.map(\.location) == ["file placeholder.png"])
        #expect(file.differences.first?.reference?.hasPrefix("3 bytes, FNV-1a ") == true)
    }

    @Test func recordsAreComparedByNameAndFingerprintButNotByTime() throws {
        let failure = try check(.editedMigration)
        #expect(failure.differences == [
            FreshInstallCheckFailure.Difference(
                store: "library", kind: .records, location: "records of library, migration 1.1",
                reference: "applied, named \"folders\", fingerprint \(MigrationFingerprint(of: "folder table"))",
                installed: "applied, named \"folders\", fingerprint \(MigrationFingerprint(of: "folder table, edited"))",
                path: "through the squashes"),
        ])
    }

    @Test func anInvariantIsCheckedOnBothInstalls() throws {
        var tester = tester(.forgetsRow)
        tester.invariants = [
            .on("library", as: SQLiteStore.self, "the inbox folder exists") { _, after in
                try after.read { db in try db.scalar("SELECT count(*) FROM folder", as: Int.self) } == 1 ? [] : ["table folder is empty"]
            },
        ]
        let failure = try #require(throws: FreshInstallCheckFailure.self) {
            try tester.checkFreshInstall { location in try Self.coordinator(at: location, squashes: false) }
        }
        #expect(failure.differences.filter { $0.kind == .invariant } == [
            FreshInstallCheckFailure.Difference(
                store: "library", kind: .invariant, location: "the inbox folder exists", reference: "the inbox folder exists",
                installed: "table folder is empty", path: "as shipped"),
        ])
    }

    @Test func inMemoryStoresAreComparedByTheirValue() throws {
        @Sendable func coordinator(_ location: StoreLocation, squashes: Bool, forgets: Bool) throws -> MigrationCoordinator {
            let coordinator = MigrationCoordinator(appVersion: "1.1")
            let counters = try coordinator.manager("counters", store: InMemoryStore<[String: Int]>([:]))
            counters.register("1.0") { $0["launches"] = 0 }
            counters.register("1.1") { $0["crashes"] = 0 }
            if squashes { counters.squash(from: "1.0", through: "1.1") { $0 = forgets ? ["launches": 0] : ["launches": 0, "crashes": 0] } }
            return coordinator
        }
        var tester = UpgradeTester(kinds: [InMemoryKind<[String: Int]>()]) { try coordinator($0, squashes: true, forgets: true) }
        tester.temporaryDirectory = folder.url
        let failure = try #require(throws: FreshInstallCheckFailure.self) {
            try tester.checkFreshInstall { try coordinator($0, squashes: false, forgets: false) }
        }
        #expect(failure.differences.map(\.location) == ["value"])
        #expect(failure.differences.first?.reference == #"{"crashes":0,"launches":0}"#)
        #expect(failure.differences.first?.installed == #"{"launches":0}"#)
    }

    @Test func aStoreOnlyOneInstallHasIsADifference() throws {
        let failure = try #require(throws: FreshInstallCheckFailure.self) {
            try tester().checkFreshInstall { location in
                let coordinator = try Self.coordinator(at: location, squashes: false)
                let audit = try coordinator.manager("audit", store: PreferencesStore(url: location.url("Audit.json")))
                audit.register("1.0") { try $0.set(true, for: "enabled") }
                return coordinator
            }
        }
        #expect(failure.differences == [
            FreshInstallCheckFailure.Difference(
                store: "audit", kind: .records, location: "managers of the store", reference: "audit", installed: nil,
                path: "as shipped"),
        ])
        var extra = UpgradeTester(kinds: [.sqlite]) { location in
            let coordinator = try Self.coordinator(at: location, squashes: true)
            let audit = try coordinator.manager("audit", store: PreferencesStore(url: location.url("Audit.json")))
            audit.register("1.0") { try $0.set(true, for: "enabled") }
            return coordinator
        }
        extra.temporaryDirectory = folder.url
        let other = try #require(throws: FreshInstallCheckFailure.self) {
            try extra.checkFreshInstall { location in try Self.coordinator(at: location, squashes: false) }
        }
        #expect(other.differences == [
            FreshInstallCheckFailure.Difference(
                store: "audit", kind: .records, location: "managers of the store", reference: nil, installed: "audit",
                path: "as shipped"),
        ])
    }
}
