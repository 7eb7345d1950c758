import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// `dropColumn`, `rebuildTable` and `renameColumn` never leave a trigger of another table or a
/// view reading a column that is gone.
@Suite struct SQLiteSchemaDependentsTests {
    let scratch: TemporaryFolder
    let store: SQLiteStore

    init() throws {
        scratch = try TemporaryFolder()
        store = SQLiteStore(url: scratch.file("dependents.sqlite"))
        try store.write { db in
            try db.execute("""
                CREATE TABLE event(id INTEGER PRIMARY KEY, title TEXT, starts_on TEXT, note TEXT);
                CREATE INDEX event_on_starts_on ON event(starts_on);
                CREATE TABLE log(id INTEGER PRIMARY KEY, event_id INTEGER, message TEXT);
                INSERT INTO event VALUES (1, 'Launch', '2024-01-01', 'n');
                """)
        }
    }

    func schema() throws -> [[DatabaseValue]] {
        try store.read { try $0.rows("SELECT type, name, sql FROM sqlite_master ORDER BY name").map(\.values) }
    }

    func refusal(_ change: @escaping (Database) throws -> Void) throws -> SQLiteStoreError {
        try #require(#expect(throws: SQLiteStoreError.self) { try store.write(change) })
    }

    /// The trigger is on `log` and reads `event.note`: SQLite checks it only when it fires, so
    /// without the check the app's next insert into `log` would fail.
    static let triggerOnLog = """
        CREATE TRIGGER log_note AFTER INSERT ON log
        BEGIN UPDATE log SET message = (SELECT note FROM event WHERE id = NEW.event_id) WHERE id = NEW.id; END
        """

    @Test func dropColumnRefusesWhenATriggerOfAnotherTableReadsIt() throws {
        try store.write { try $0.execute(Self.triggerOnLog) }
        let before = try schema()
        let error = try refusal { try $0.dropColumn("note", from: "event") }
        #expect(error == SQLiteStoreError(
            .dependentSchemaObject(.trigger("log_note"), column: "note", table: "event"), store: store.description))
        #expect(error.description.contains("trigger \"log_note\", which reads column \"note\" of table \"event\""))
        #expect(try schema() == before)
    }

    /// An indexed column: SQLite's `ALTER TABLE` refuses, and the rebuild that follows must check too.
    @Test func dropColumnOfAnIndexedColumnRefusesToo() throws {
        try store.write { try $0.execute("CREATE TRIGGER log_day AFTER INSERT ON log BEGIN SELECT starts_on FROM event; END") }
        let before = try schema()
        let error = try refusal { try $0.dropColumn("starts_on", from: "event") }
        #expect(error.reason == .dependentSchemaObject(.trigger("log_day"), column: "starts_on", table: "event"))
        #expect(try schema() == before)
    }

    @Test func dropColumnRefusesWhenAViewReadsIt() throws {
        try store.write { try $0.execute("CREATE VIEW notes AS SELECT id, note FROM event") }
        let error = try refusal { try $0.dropColumn("note", from: "event") }
        #expect(error.reason == .dependentSchemaObject(.view("notes"), column: "note", table: "event"))
        #expect(try store.read { try $0.tableInfo("event").map(\.name) } == ["id", "title", "starts_on", "note"])
    }

    @Test func dropColumnToldToDropItsDependents() throws {
        try store.write { try $0.execute(Self.triggerOnLog + "; CREATE VIEW notes AS SELECT id, note FROM event") }
        try store.write { try $0.dropColumn("note", from: "event", dependents: .drop) }
        try store.write { try $0.execute("INSERT INTO log(event_id, message) VALUES (1, 'x')") }
        let names = try store.read { try $0.rows("SELECT name FROM sqlite_master WHERE type IN ('view', 'trigger')") }
        #expect(names.isEmpty)
        #expect(try store.read { try $0.tableInfo("event").map(\.name) } == ["id", "title", "starts_on"])
    }

    @Test func rebuildTableRefusesWhenATriggerOfAnotherTableReadsARemovedColumn() throws {
        try store.write { try $0.execute(Self.triggerOnLog) }
        let before = try schema()
        let error = try refusal { db in
            try db.rebuildTable("event", definition: "id INTEGER PRIMARY KEY, title TEXT NOT NULL, starts_on TEXT")
        }
        #expect(error.reason == .dependentSchemaObject(.trigger("log_note"), column: "note", table: "event"))
        #expect(try schema() == before)
        try store.write { db in
            try db.rebuildTable("event", definition: "id INTEGER PRIMARY KEY, title TEXT NOT NULL, starts_on TEXT", dependents: .drop)
        }
        #expect(try store.read { try $0.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'", as: Int.self) } == 0)
    }

    /// Renaming rewrites them, as documented: the trigger of another table and the view read the new name.
    @Test func renameColumnRewritesTriggersOfOtherTablesAndViews() throws {
        try store.write { try $0.execute(Self.triggerOnLog + "; CREATE VIEW notes AS SELECT id, note FROM event") }
        try store.write { try $0.renameColumn("note", to: "remark", in: "event") }
        try store.write { try $0.execute("INSERT INTO log(event_id, message) VALUES (1, 'x')") }
        #expect(try store.read { try $0.scalar("SELECT message FROM log", as: String.self) } == "n")
        #expect(try store.read { try $0.scalar("SELECT remark FROM notes", as: String.self) } == "n")
    }
}
