import Foundation
import StoreMigrations
import StoreMigrationsSQLite
import StoreMigrationsSQLiteTesting
import StoreMigrationsTesting
import Testing
import TestSupport
import NotesApp

/// The demo's own upgrade test, with the kit: its 1.0 stores, as the 1.0 app wrote them,
/// upgraded by 2.0, equal a fresh install of 2.0 in schema and records, and keep the app's data.
@Suite struct DemoUpgradeTests {
    let folder: TemporaryFolder
    let tester: UpgradeTester

    init() throws {
        folder = try TemporaryFolder()
        var tester = UpgradeTester(kinds: [.sqlite]) { location in
            try NotesMigrations.coordinator(for: LegacyNotesApp(directory: location.directory))
        }
        tester.temporaryDirectory = folder.url
        tester.invariants = Self.invariants
        self.tester = tester
    }

    /// The 1.0 stores written by the 1.0 app's own code (no migrations), captured as a fixture.
    func fixtureOf1_0(notes: Int) throws -> UpgradeFixture {
        let location = try tester.makeLocation()
        defer { try? tester.discard(location) }
        try LegacyNotesApp(directory: location.directory).create(notes: notes) { _ in }
        return try tester.capture(location, appVersion: "1.0", into: folder.file("notes-1.0"))
    }

    @Test func the1_0StoresUpgradedEqualAFresh2_0InstallAndKeepTheirData() throws {
        let fixture = try fixtureOf1_0(notes: 300)
        #expect(fixture.stores.map(\.managers) == [["preferences"], ["library"], ["thumbnails"]])
        let report = try tester.check(fixture)
        #expect(report.stores == ["preferences", "library", "thumbnails"])
        #expect(report.invariantsChecked == Self.invariants.count)
        #expect(Set(report.upgrade.steps.map { "\($0.id)" }) == [
            "preferences@1.1", "library:baseline@1.0", "library@1.1", "library@1.1-1", "library@1.2", "preferences@2.0", "library@2.0", "thumbnails@2.0",
        ])
        #expect(report.upgrade.steps.allSatisfy { $0.outcome == .applied })
    }

    @Test func aDemoMigrationThatLosesCategoriesIsCaughtByAnInvariant() throws {
        var broken = UpgradeTester(kinds: [.sqlite]) { location in
            let coordinator = try NotesMigrations.coordinator(for: LegacyNotesApp(directory: location.directory))
            // A later release "tidies" the categories of upgraded notes away.
            let cleanup = try coordinator.manager("cleanup", store: SQLiteStore(url: LegacyNotesApp(directory: location.directory).databaseURL))
            cleanup.register("2.0", dependsOn: [MigrationReference(manager: "library", version: "2.0")]) { db in
                try db.execute("DELETE FROM note_category WHERE note_id % 2 = 0")
            }
            return coordinator
        }
        broken.temporaryDirectory = folder.url
        broken.invariants = Self.invariants
        let failure = try #require(throws: UpgradeCheckFailure.self) { try broken.check(fixtureOf1_0(notes: 24)) }
        #expect(failure.differences.map(\.location) == ["every 1.0 note keeps its category"])
        #expect(failure.differences.map(\.store) == ["library, cleanup"])
        #expect(failure.differences.first?.upgraded == "note 2 lost its category \"personal\"; 10 notes in all")
    }

    /// What 2.0 must keep of the 1.0 data, beyond the schema.
    static let invariants: [DataInvariant] = [
        .on("preferences", as: PreferencesStore.self, "every 1.0 preference keeps its value under its 2.0 key") { before, after in
            let old = try before.read(), new = try after.read()
            let renamed: [(String, String)] = [
                ("showHelp", "onboarding.showHelp"), ("sortOrder", "notes.sortOrder"), ("fontSize", "appearance.fontSize"),
                ("lastNoteID", "lastNoteID"), ("syncEnabled", "syncEnabled"),
            ]
            return renamed.compactMap { from, to in
                old[.init(stringLiteral: from)] == new[.init(stringLiteral: to)] ? nil
                    : "key \(to) is \(new[.init(stringLiteral: to)].map { "\($0)" } ?? "missing"), 1.0's \(from) was \(old[.init(stringLiteral: from)].map { "\($0)" } ?? "missing")"
            } + (new["legacyFlag"] == nil ? [] : ["key legacyFlag is still there"])
        },
        .on("library", as: SQLiteStore.self, "every 1.0 note is kept with its title and date") { before, after in
            let old = try before.read { db in try db.rows("SELECT id, title, date FROM note ORDER BY id").map { "\($0)" } }
            let new = try after.read { db in try db.rows("SELECT id, title, created_at AS date FROM note ORDER BY id").map { "\($0)" } }
            return old == new ? [] : ["table note has \(new.count) rows, 1.0 had \(old.count); first difference: "
                + (zip(old, new).first { $0 != $1 }.map { "\($0.1) for \($0.0)" } ?? "a missing row")]
        },
        .on("library", as: SQLiteStore.self, "every 1.0 note keeps its category") { before, after in
            let old = try before.read { db in
                try db.rows("SELECT id, category FROM note ORDER BY id").compactMap { row -> (Int, String)? in
                    let category = (try row["category"] as String?)?.trimmingCharacters(in: .whitespaces) ?? ""
                    return category.isEmpty ? nil : (try row["id"], category.lowercased())
                }
            }
            let new = try after.read { db in
                Dictionary(uniqueKeysWithValues: try db.rows(
                    "SELECT nc.note_id AS id, lower(c.name) AS name FROM note_category AS nc JOIN category AS c ON c.id = nc.category_id"
                ).map { row -> (Int, String) in (try row["id"], try row["name"]) })
            }
            let lost = old.filter { new[$0.0] != $0.1 }
            guard let first = lost.first else { return [] }
            return ["note \(first.0) lost its category \"\(first.1)\"; \(lost.count) notes in all"]
        },
        .on("library", as: SQLiteStore.self, "every event and tag has a GUID of its own") { _, after in
            try after.read { db in
                try ["event", "tag"].compactMap { table in
                    let missing = try db.scalar("SELECT count(*) FROM \(table) WHERE guid IS NULL", as: Int.self) ?? 0
                    return missing == 0 ? nil : "table \(table): \(missing) rows without a GUID"
                }
            }
        },
    ]
}
