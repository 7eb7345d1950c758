import Foundation
import Testing
import StoreMigrations
import StoreMigrationsSQLite
import TestSupport

/// New databases created from the declared schema the history ends in
/// (`createNewDatabasesFromSchema`): the same schema and records as the replayed history, the
/// path each store takes, and the histories a creation refuses before anything runs.
@Suite struct SchemaCreationTests {
    let scratch: TemporaryFolder
    let url: URL

    init() throws {
        scratch = try TemporaryFolder()
        url = scratch.file("library.sqlite")
    }

    /// What the history's last migration declares: 1.0 and 1.1 made `note` by SQL and 1.2 wrote
    /// a welcome note; 2.0 makes `title` required, adds `tag`, a join table and indexes.
    static let schema: DeclaredSchema = [
        .table("note", primaryKey: ["id"], columns: [
            .column("id", .integer),
            .column("title", .text, notNull: true, default: ""),
            .column("guid", .text),
        ], indexes: [.index("note_on_guid", on: ["guid"], unique: true)]),
        .table("tag", primaryKey: ["id"], columns: [
            .column("id", .integer), .column("name", .text, notNull: true),
        ], unique: [["name"]]),
        .table("note_tag", primaryKey: ["note_id", "tag_id"], columns: [
            .column("note_id", .integer, notNull: true), .column("tag_id", .integer, notNull: true),
        ], foreignKeys: [
            .foreignKey(["note_id"], references: "note", columns: ["id"], onDelete: .cascade),
            .foreignKey(["tag_id"], references: "tag", columns: ["id"], onDelete: .cascade),
        ], indexes: [.index("note_tag_on_tag", on: ["tag_id"])]),
    ]

    /// A release of the library: the history up to `appVersion`'s view of it (1.0, 1.1, 1.2 by
    /// SQL, 2.0 the declared schema), created from the schema unless `creates` is false.
    func release(
        _ appVersion: Version, at url: URL? = nil, creates: Bool = true, historyData: NewDatabaseData = .seed(welcome),
        _ more: (MigrationManager<SQLiteStore>) -> Void = { _ in }
    ) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: appVersion)
        let library = try coordinator.manager("library", store: SQLiteStore(url: url ?? self.url))
        library.register("1.0", options: .named("notes"), sql: "CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT)")
        library.register("1.1", options: .named("guids"), sql: "ALTER TABLE note ADD COLUMN guid TEXT")
        library.register("1.2", options: .named("welcome"), sql: "INSERT INTO note(title) VALUES ('Welcome')")
        library.register("2.0", options: .named("tags"), schema: Self.schema)
        more(library)
        if creates { library.createNewDatabasesFromSchema(historyData: historyData) }
        return coordinator
    }

    static let welcome: @Sendable (Database) throws -> Void = { db in
        try db.execute("INSERT INTO note(title) VALUES ('Welcome')")
    }

    /// The schema as SQLite describes it, whatever the statements' spelling: every table,
    /// index and their columns, keys, defaults and foreign keys, the store's tables left out.
    func structure(at path: String) throws -> [[String?]] {
        let user = "m.type = 'table' AND m.name NOT LIKE 'store_migrations%'"
        return try RawSQLite.rows(
            "SELECT type, name, tbl_name FROM sqlite_master WHERE tbl_name NOT LIKE 'store_migrations%' ORDER BY type, name",
            at: path)
            + RawSQLite.rows(
                "SELECT m.name, p.name, p.type, p.\"notnull\", p.dflt_value, p.pk FROM sqlite_master AS m "
                    + "JOIN pragma_table_info(m.name) AS p WHERE \(user) ORDER BY m.name, p.cid", at: path)
            + RawSQLite.rows(
                "SELECT m.name, l.name, l.\"unique\", l.origin, l.partial, i.seqno, i.name FROM sqlite_master AS m "
                    + "JOIN pragma_index_list(m.name) AS l JOIN pragma_index_info(l.name) AS i WHERE \(user) "
                    + "ORDER BY m.name, l.name, i.seqno", at: path)
            + RawSQLite.rows(
                "SELECT m.name, f.id, f.seq, f.\"table\", f.\"from\", f.\"to\", f.on_delete, f.on_update "
                    + "FROM sqlite_master AS m JOIN pragma_foreign_key_list(m.name) AS f WHERE \(user) "
                    + "ORDER BY m.name, f.id, f.seq", at: path)
    }

    /// The library's history: version, name and fingerprint of each applied migration.
    func history(at path: String) throws -> [[String?]] {
        try RawSQLite.rows(
            "SELECT version, name, fingerprint FROM store_migrations_history WHERE manager = 'library' ORDER BY version",
            at: path)
    }

    @Test func aNewDatabaseIsCreatedFromTheSchemaWithTheReplayedSchemaRecordsAndRows() throws {
        let coordinator = try release("2.0")
        #expect(try coordinator.plan().steps.map(\.id.description) == ["library:squash@2.0"])
        #expect(try coordinator.run().steps.map(\.outcome) == [.applied])

        let replayed = scratch.file("replayed.sqlite")
        let replay = try release("2.0", at: replayed, creates: false)
        #expect(try replay.plan().steps.count == 4)
        #expect(try replay.run().succeeded)

        #expect(try structure(at: url.path) == structure(at: replayed.path))
        #expect(try structure(at: url.path).contains(["index", "note_tag_on_tag", "note_tag"]))
        let recorded = try history(at: url.path)
        #expect(recorded.map { $0[0] } == ["1.0", "1.1", "1.2", "2.0"])
        #expect(recorded.map { $0[1] } == ["notes", "guids", "welcome", "tags"])
        #expect(recorded.allSatisfy { $0[2] != nil })
        #expect(try recorded == history(at: replayed.path))
        let notes = "SELECT id, title, guid FROM note ORDER BY id"
        #expect(try RawSQLite.rows(notes, at: url.path) == RawSQLite.rows(notes, at: replayed.path))
    }

    @Test func aLongHistorysFingerprintsComputedAsideAreRecordedAndComparedByTheNextPlan() throws {
        // 400 texts of about 150 bytes: enough for the fingerprints to be computed aside, on the
        // table's own queue, while the creation's body runs (`FingerprintTable`).
        func sql(_ index: Int, edited: Bool = false) -> String {
            "CREATE TABLE t\(index)(id INTEGER PRIMARY KEY, name TEXT NOT NULL DEFAULT '', note TEXT\(edited ? ", extra TEXT" : ""))"
                + String(repeating: " -- padding", count: 8)
        }
        func release(editing edited: Int? = nil) throws -> MigrationCoordinator {
            let coordinator = MigrationCoordinator(appVersion: "401")
            let library = try coordinator.manager("library", store: SQLiteStore(url: url))
            for index in 1...400 { library.register(Version(index), sql: sql(index, edited: index == edited)) }
            library.register("401", schema: [.table("note", primaryKey: ["id"], columns: [.column("id", .integer)])])
            library.createNewDatabasesFromSchema(historyData: .notNeeded)
            return coordinator
        }
        #expect(try release().run().succeeded)
        let recorded = try history(at: url.path)
        #expect(recorded.count == 401)
        let fingerprints = Dictionary(uniqueKeysWithValues: recorded.map { ($0[0]!, $0[2]) })
        let wrong = (1...400).filter { fingerprints["\($0)"] != MigrationFingerprint(of: sql($0)).rawValue }
        #expect(wrong.isEmpty, "migrations recorded with another fingerprint than their text's")

        let plan = try release(editing: 7).plan()
        #expect(plan.managers.first?.changedFingerprints.map(\.migration.version) == ["7"])
        #expect(plan.managers.first?.changedFingerprints.first?.current == MigrationFingerprint(of: sql(7, edited: true)))
    }

    @Test func historyDataNotNeededLeavesTheTablesEmpty() throws {
        #expect(try release("2.0", historyData: .notNeeded).run().succeeded)
        #expect(try RawSQLite.strings("SELECT count(*) FROM note", at: url.path) == ["0"])
        #expect(try history(at: url.path).map { $0[0] } == ["1.0", "1.1", "1.2", "2.0"])
    }

    @Test func aDatabasePartWayReplaysTheRestOfTheHistory() throws {
        let first = try release("1.1")
        #expect(try first.plan().steps.map(\.id.description) == ["library@1.0", "library@1.1"])
        #expect(try first.run().succeeded)
        let coordinator = try release("2.0")
        #expect(try coordinator.plan().steps.map(\.id.description) == ["library@1.2", "library@2.0"])
        #expect(try coordinator.run().succeeded)
        #expect(try history(at: url.path).map { $0[0] } == ["1.0", "1.1", "1.2", "2.0"])
        #expect(try RawSQLite.strings("SELECT title FROM note", at: url.path) == ["Welcome"])
    }

    @Test func aDatabaseUpToDateRunsNothing() throws {
        #expect(try release("2.0").run().succeeded)
        let coordinator = try release("2.0", historyData: .seed { _ in throw TestFailure(message: "seeded twice") })
        #expect(try coordinator.plan().isUpToDate)
        let report = try coordinator.run()
        #expect(report.steps.isEmpty)
        #expect(!report.didRunAnything)
        #expect(try RawSQLite.strings("SELECT count(*) FROM note", at: url.path) == ["1"])
    }

    @Test func aSeedThatThrowsLeavesNeitherTablesNorRecords() throws {
        let report = try runReport(of: release("2.0", historyData: .seed { db in
            try Self.welcome(db)
            throw TestFailure(message: "seed failed after its writes")
        }))
        #expect(report.steps.map(\.outcome) == [.failed(message: "seed failed after its writes")])
        // The database was built aside: nothing was linked into place, nothing is left aside.
        #expect(try scratch.names() == [])
        #expect(try release("2.0").run().succeeded)
        #expect(try RawSQLite.strings("SELECT count(*) FROM note", at: url.path) == ["1"])
    }

    @Test func aDeclarationThatContradictsItselfFailsTheCreationWithItsProblemAndWritesNothing() throws {
        // Its statements and check are made aside with the fingerprints, while the step opens the
        // database: the step still refuses the declaration before its first statement.
        let broken: DeclaredSchema = [
            .table("note", primaryKey: ["id"], columns: [.column("id", .integer)], indexes: [.index("note_on_title", on: ["title"])]),
        ]
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let library = try coordinator.manager("library", store: SQLiteStore(url: url))
        library.register("1.0", sql: "CREATE TABLE note(id INTEGER PRIMARY KEY)")
        library.register("2.0", schema: broken)
        library.createNewDatabasesFromSchema(historyData: .notNeeded)
        let report = try runReport(of: coordinator)
        guard case .failed(let message)? = report.steps.first?.outcome else {
            Issue.record("the creation did not fail: \(report.steps.map(\.outcome))")
            return
        }
        #expect(message.contains("title"))
        #expect(message.contains("is named in index note_on_title but the table does not declare it"))
        #expect(try scratch.names() == [])
    }

    @Test func aDatabaseWithTablesOfItsOwnReachesTheSchemaKeepingTheirRows() throws {
        // A database the app wrote before it adopted the library: its note table becomes the
        // declared one, as the declared-schema migration would make it.
        try RawSQLite.execute("CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT); INSERT INTO note(title) VALUES ('Mine')", at: url.path)
        #expect(try release("2.0", historyData: .notNeeded).run().succeeded)
        #expect(try RawSQLite.strings("SELECT title FROM note", at: url.path) == ["Mine"])
        #expect(try RawSQLite.strings("SELECT name FROM pragma_table_info('note') ORDER BY cid", at: url.path) == ["id", "title", "guid"])
        #expect(try history(at: url.path).map { $0[0] } == ["1.0", "1.1", "1.2", "2.0"])
    }

    @Test func aHistoryEndingInAMigrationWithoutADeclaredSchemaIsRefusedBeforeAnythingRuns() throws {
        let coordinator = try release("3.0") { library in
            library.register("3.0", sql: "CREATE TABLE later(x)")
        }
        let store = SQLiteStore(url: url).description
        let error = SchemaCreationError.lastMigrationNotDeclared(manager: "library", store: store, migration: "3.0")
        #expect(throws: error) { try coordinator.plan() }
        #expect(throws: error) { try coordinator.run() }
        #expect(!FileManager.default.fileExists(atPath: url.path))
        #expect(error.description.contains("Register library@3.0 with register(_:schema:)"))
    }

    @Test func aHistoryWithAPostDeployMigrationIsRefusedEvenOnADatabaseUpToDate() throws {
        #expect(try release("2.0", creates: false) { library in
            library.register("1.2-1", options: .postDeploy, sql: "UPDATE note SET guid = NULL")
        }.run(postDeploy: true).succeeded)
        let before = try history(at: url.path)
        let coordinator = try release("2.0") { library in
            library.register("1.2-1", options: .postDeploy, sql: "UPDATE note SET guid = NULL")
        }
        #expect(throws: SchemaCreationError.replacesPostDeployMigration(
            manager: "library", store: SQLiteStore(url: url).description, migration: "1.2-1")) { try coordinator.run() }
        #expect(try history(at: url.path) == before)
    }

    @Test func aHistoryWithAResumableMigrationIsRefused() throws {
        let coordinator = try release("2.0") { library in
            library.registerResumable("1.2-1") { _, _ in .finished(processed: 0) }
        }
        #expect(throws: SchemaCreationError.replacesResumableMigration(
            manager: "library", store: SQLiteStore(url: url).description, migration: "1.2-1")) { try coordinator.plan() }
        #expect(!FileManager.default.fileExists(atPath: url.path))
    }

    @Test func anAppVersionBeforeTheSchemaReplaysTheHistoryUpToIt() throws {
        let coordinator = try release("1.2")
        #expect(try coordinator.plan().steps.map(\.id.description) == ["library@1.0", "library@1.1", "library@1.2"])
    }
}
