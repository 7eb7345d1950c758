import Foundation
import StoreMigrations
import StoreMigrationsSQLite
import StoreMigrationsSQLiteTesting
import StoreMigrationsTesting
import Testing
import TestSupport

/// `checkFreshInstall` on a library created from its declared schema
/// (`createNewDatabasesFromSchema`): the created database must end where the replayed history
/// (two SQL migrations, then the migration to the declared schema) does, and a declaration that
/// forgets what the history made is caught, column by column.
@Suite struct SchemaCreationFreshInstallTests {
    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder()
    }

    /// What 2.0 declares: the note table 1.0 and 1.1 made by SQL, and a tag table with its index.
    static func schema(forgetsPinned: Bool = false) -> DeclaredSchema {
        var noteColumns: [DeclaredSchema.Column] = [.column("id", .integer), .column("title", .text, notNull: true, default: "")]
        if !forgetsPinned { noteColumns.append(.column("pinned", .integer, notNull: true, default: 0)) }
        return [
            .table("note", primaryKey: ["id"], columns: noteColumns),
            .table("tag", primaryKey: ["id"], columns: [
                .column("id", .integer), .column("name", .text, notNull: true),
            ], indexes: [.index("tag_on_name", on: ["name"], unique: true)]),
        ]
    }

    /// The 2.0 app: the library's history ends in `schema`; new databases are created from it
    /// when `creates` is true, and replay the history otherwise.
    static func coordinator(at location: StoreLocation, creates: Bool, schema: DeclaredSchema = schema()) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let library = try coordinator.manager("library", store: SQLiteStore(url: location.url("Library.sqlite")))
        library.register("1.0", options: .named("notes"), sql: "CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT NOT NULL DEFAULT '')")
        library.register("1.1", options: .named("pins"), sql: "ALTER TABLE note ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0")
        library.register("2.0", options: .named("tags"), schema: schema)
        if creates { library.createNewDatabasesFromSchema(historyData: .notNeeded) }
        return coordinator
    }

    func tester(schema: DeclaredSchema = schema()) -> UpgradeTester {
        var tester = UpgradeTester(kinds: [.sqlite]) { location in try Self.coordinator(at: location, creates: true, schema: schema) }
        tester.temporaryDirectory = folder.url
        return tester
    }

    @Test func aDatabaseCreatedFromTheDeclaredSchemaEqualsTheReplayedHistory() throws {
        let report = try tester().checkFreshInstall("created from the schema") { location in
            try Self.coordinator(at: location, creates: false)
        }
        #expect(report.stores == ["library"])
        #expect(report.install.steps.map(\.id.description) == ["library:squash@2.0"])
        #expect(report.reference.steps.map(\.id.description) == ["library@1.0", "library@1.1", "library@2.0"])
    }

    @Test func aDeclarationThatForgetsAColumnTheHistoryMadeIsCaught() throws {
        let failure = try #require(throws: FreshInstallCheckFailure.self) {
            try tester(schema: Self.schema(forgetsPinned: true)).checkFreshInstall("created from the schema") { location in
                try Self.coordinator(at: location, creates: false)
            }
        }
        #expect(failure.stores == ["library"])
        #expect(failure.differences.map(\.location) == [
            "table note, order of columns", "table note, column pinned", "records of library, migration 2.0",
        ])
        #expect(failure.differences[0].reference == "id, title, pinned" && failure.differences[0].installed == "id, title")
        #expect(failure.differences[1].reference == "\"pinned\" INTEGER NOT NULL DEFAULT 0" && failure.differences[1].installed == nil)
        // The declaration is the migration's fingerprint: editing it shows in the records too.
        #expect(failure.differences[2].reference?.hasPrefix("applied, named \"tags\", fingerprint v1:") == true)
        #expect(failure.differences[2].reference != failure.differences[2].installed)
        #expect(failure.steps == ["library created from the schema: library:squash@2.0; replayed: library@1.0, library@1.1, library@2.0"])
    }
}
