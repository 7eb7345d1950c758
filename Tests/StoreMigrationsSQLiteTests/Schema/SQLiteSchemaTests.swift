import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif

@Suite struct SQLiteSchemaTests {
    let scratch: TemporaryFolder
    let db: Database

    /// A calendar app's schema: calendars own events (ON DELETE CASCADE), attendees refer to
    /// events (NO ACTION), with indexes, a trigger and a view.
    init() throws {
        scratch = try TemporaryFolder()
        db = try scratch.openDatabase()
        try db.execute("""
            CREATE TABLE calendar(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
            CREATE TABLE event(
                id INTEGER PRIMARY KEY,
                calendar_id INTEGER NOT NULL REFERENCES calendar(id) ON DELETE CASCADE,
                title TEXT,
                starts_on TEXT,
                note TEXT DEFAULT 'none');
            CREATE INDEX event_on_calendar ON event(calendar_id);
            CREATE INDEX event_on_starts_on ON event(starts_on);
            CREATE TABLE attendee(id INTEGER PRIMARY KEY, event_id INTEGER REFERENCES event(id), name TEXT);
            CREATE TRIGGER event_edited AFTER UPDATE OF title ON event
                BEGIN UPDATE event SET note = 'edited' WHERE id = new.id; END;
            CREATE VIEW event_title AS SELECT id, title FROM event;
            INSERT INTO calendar(id, name) VALUES (1, 'Home'), (2, 'Work');
            """)
        let event = try db.prepare("INSERT INTO event(calendar_id, title, starts_on) VALUES (?, ?, ?)")
        let attendee = try db.prepare("INSERT INTO attendee(event_id, name) VALUES (?, ?)")
        for number in 1...50 {
            try event.execute(arguments: [
                .integer(Int64(number % 2 + 1)), number % 5 == 0 ? nil : .text("Event \(number)"),
                .text("2024-01-\(String(format: "%02d", number % 28 + 1))"),
            ])
            try attendee.execute(arguments: [.integer(db.lastInsertedRowID), .text("Guest \(number)")])
        }
    }

    /// Every row of `table` with its rowid, in rowid order.
    func contents(_ table: String, columns: String = "*") throws -> [[DatabaseValue]] {
        try db.rows("SELECT rowid, \(columns) FROM \(table) ORDER BY rowid").map(\.values)
    }

    /// Runs `body` in a transaction as a store step does: with foreign keys enforced throughout,
    /// or switched off and checked once before commit.
    func inStep(enforcingForeignKeys: Bool, _ body: () throws -> Void) throws {
        try db.setPragmaFlag("foreign_keys", enforcingForeignKeys)
        defer { try? db.setPragmaFlag("foreign_keys", true) }
        try db.execute("BEGIN IMMEDIATE")
        do {
            try body()
            if !enforcingForeignKeys { try db.checkForeignKeys() }
            try db.execute("COMMIT")
        } catch {
            try db.execute("ROLLBACK")
            throw error
        }
    }

    // MARK: Reading the schema

    @Test func introspection() throws {
        #expect(try db.tableExists("event"))
        #expect(try db.tableExists("EVENT"))
        #expect(try !db.tableExists("event_title"), "a view is not a table")
        #expect(try !db.tableExists("missing"))

        let columns = try db.tableInfo("event")
        #expect(columns.map(\.name) == ["id", "calendar_id", "title", "starts_on", "note"])
        #expect(columns[0].type == "INTEGER" && columns[0].primaryKeyPosition == 1)
        #expect(columns[1].isNotNull && columns[1].primaryKeyPosition == 0)
        #expect(columns[4].defaultValueSQL == "'none'")
        #expect(throws: SQLiteError.self) { _ = try db.tableInfo("missing") }

        let indexes = try db.indexes(on: "event")
        #expect(indexes.map(\.name) == ["event_on_calendar", "event_on_starts_on"])
        #expect(indexes[0].columns == ["calendar_id"] && !indexes[0].isUnique && indexes[0].origin == .createIndex)
        let unique = try #require(try db.indexes(on: "calendar").first)
        #expect(unique.isUnique && unique.origin == .uniqueConstraint && unique.columns == ["name"])

        let keys = try db.foreignKeys(of: "event")
        #expect(keys.count == 1)
        #expect(keys[0].parentTable == "calendar" && keys[0].columns == ["calendar_id"])
        #expect(keys[0].parentColumns == ["id"] && keys[0].onDelete == "CASCADE" && keys[0].onUpdate == "NO ACTION")
        #expect(try db.foreignKeys(of: "calendar").isEmpty)
    }

    // MARK: ALTER TABLE helpers

    @Test func addColumnFillsExistingRowsWithTheDefault() throws {
        let before = try contents("event")
        try db.addColumn("archived", type: .integer, to: "event", notNull: true, defaultValue: 0)
        try db.addColumn("color", type: "TEXT", to: "event", defaultValue: "it's blue")
        try db.addColumn("guid", type: .text, to: "event")
        #expect(try contents("event") == before.map { $0 + [.integer(0), .text("it's blue"), .null] })
        let added = try db.tableInfo("event").suffix(3)
        #expect(added.map(\.type) == ["INTEGER", "TEXT", "TEXT"])
        #expect(added.first?.isNotNull == true)
    }

    @Test func renameColumnKeepsValuesAndUpdatesIndexesAndTriggers() throws {
        let before = try contents("event", columns: "title, starts_on")
        try db.renameColumn("title", to: "name", in: "event")
        try db.renameColumn("starts_on", to: "day", in: "event")
        #expect(try contents("event", columns: "name, day") == before)
        #expect(try db.indexes(on: "event").first { $0.name == "event_on_starts_on" }?.columns == ["day"])
        try db.execute("UPDATE event SET name = 'Renamed' WHERE id = 1")
        #expect(try db.scalar("SELECT note FROM event WHERE id = 1", as: String.self) == "edited")
        #expect(try db.scalar("SELECT name FROM event_title WHERE id = 1", as: String.self) == "Renamed", "views follow")
    }

    @Test func renameTableCarriesForeignKeysAlong() throws {
        let before = try contents("calendar")
        try db.renameTable("calendar", to: "agenda")
        #expect(try contents("agenda") == before)
        #expect(try !db.tableExists("calendar"))
        #expect(try db.foreignKeys(of: "event").first?.parentTable == "agenda")
        #expect(try db.foreignKeyViolations().isEmpty)
    }

    @Test func createIndexIsListedAndEnforced() throws {
        try db.createIndex("attendee_unique_name", on: "attendee", columns: ["event_id", "name"], unique: true)
        let index = try #require(try db.indexes(on: "attendee").first { $0.name == "attendee_unique_name" })
        #expect(index.isUnique && index.columns == ["event_id", "name"])
        let error = try #require(#expect(throws: SQLiteError.self) {
            try db.execute("INSERT INTO attendee(event_id, name) VALUES (1, 'Guest 1')")
        })
        #expect(error.isConstraintViolation)
    }

    // MARK: dropColumn

    @Test func dropColumnKeepsTheOtherColumns() throws {
        let before = try contents("event", columns: "id, calendar_id, title, starts_on")
        try db.dropColumn("note", from: "event")
        #expect(try db.tableInfo("event").map(\.name) == ["id", "calendar_id", "title", "starts_on"])
        #expect(try contents("event") == before)
    }

    @Test func dropColumnRebuildsWhenTheColumnIsIndexed() throws {
        let before = try contents("event", columns: "id, calendar_id, title, note")
        try inStep(enforcingForeignKeys: true) {
            try db.dropColumn("starts_on", from: "event")
        }
        #expect(try db.tableInfo("event").map(\.name) == ["id", "calendar_id", "title", "note"])
        #expect(try contents("event") == before)
        #expect(try db.indexes(on: "event").map(\.name) == ["event_on_calendar"])
        #expect(try db.foreignKeys(of: "event").first?.onDelete == "CASCADE")
        #expect(try db.foreignKeys(of: "attendee").first?.parentTable == "event")
        try db.execute("UPDATE event SET title = 'x' WHERE id = 2")
        #expect(try db.scalar("SELECT note FROM event WHERE id = 2", as: String.self) == "edited", "trigger kept")
    }

    @Test func dropColumnOfACascadingParentNeedsForeignKeysOff() throws {
        let calendars = try contents("calendar", columns: "id")
        let events = try contents("event")

        let refused = try #require(#expect(throws: SQLiteError.self) {
            try inStep(enforcingForeignKeys: true) { try db.dropColumn("name", from: "calendar") }
        })
        #expect(refused.message.contains("ON DELETE CASCADE"))
        #expect(try db.tableInfo("calendar").map(\.name) == ["id", "name"])

        try inStep(enforcingForeignKeys: false) {
            try db.dropColumn("name", from: "calendar")
        }
        #expect(try contents("calendar") == calendars)
        #expect(try contents("event") == events, "no cascade ran")
        #expect(try db.indexes(on: "calendar").isEmpty)
    }

    @Test func dropColumnRefusesAColumnATableConstraintUses() throws {
        try db.execute("CREATE TABLE slot(a INTEGER, b TEXT, c TEXT, UNIQUE (b, c)); INSERT INTO slot VALUES (1, 'x', 'y');")
        let error = try #require(#expect(throws: SQLiteError.self) { try db.dropColumn("c", from: "slot") })
        #expect(error.message.contains("UNIQUE (b, c)"))
        #expect(try contents("slot") == [[.integer(1), .integer(1), .text("x"), .text("y")]])
        #expect(throws: SQLiteError.self) { try db.dropColumn("missing", from: "slot") }
    }

    // MARK: rebuildTable

    @Test func rebuildTableKeepsRowsIndexesTriggersAndForeignKeys() throws {
        let before = try contents("event")
        let foreignKeys = try db.foreignKeys(of: "event")
        try inStep(enforcingForeignKeys: true) {
            try db.rebuildTable(
                "event",
                definition: """
                    id INTEGER PRIMARY KEY,
                    calendar_id INTEGER NOT NULL REFERENCES calendar(id) ON DELETE CASCADE,
                    title TEXT NOT NULL DEFAULT '',
                    starts_on TEXT,
                    note TEXT DEFAULT 'none',
                    CHECK (length(title) < 100)
                    """,
                copying: ["title": "coalesce(title, '(untitled)')"])
        }
        let expected = before.map { row in
            row.enumerated().map { $0.offset == 3 && $0.element == .null ? .text("(untitled)") : $0.element }
        }
        #expect(try contents("event") == expected)
        #expect(try db.tableInfo("event")[2].isNotNull)
        #expect(try db.indexes(on: "event").map(\.name) == ["event_on_calendar", "event_on_starts_on"])
        #expect(try db.foreignKeys(of: "event") == foreignKeys)
        #expect(try db.foreignKeys(of: "attendee").first?.parentTable == "event")
        #expect(try db.scalar("SELECT count(*) FROM attendee", as: Int.self) == 50)
        try db.execute("UPDATE event SET title = 'x' WHERE id = 3")
        #expect(try db.scalar("SELECT note FROM event WHERE id = 3", as: String.self) == "edited")
        #expect(try db.scalar("SELECT title FROM event_title WHERE id = 3", as: String.self) == "x")
        #expect(throws: SQLiteError.self) { try db.execute("INSERT INTO event(calendar_id) VALUES (99)") }
    }

    @Test func rebuildTableKeepsRowidsAndTheAutoincrementCounter() throws {
        try db.execute("""
            CREATE TABLE log(message TEXT);
            INSERT INTO log(rowid, message) VALUES (3, 'a'), (10, 'b'), (42, 'c');
            CREATE TABLE ticket(id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT);
            INSERT INTO ticket(title) VALUES ('1'), ('2'), ('3');
            DELETE FROM ticket WHERE id = 3;
            """)
        try inStep(enforcingForeignKeys: false) {
            try db.rebuildTable("log", definition: "message TEXT NOT NULL, level INTEGER DEFAULT 0")
            try db.rebuildTable("ticket", definition: "id INTEGER PRIMARY KEY AUTOINCREMENT, title TEXT NOT NULL")
        }
        #expect(try contents("log") == [
            [.integer(3), .text("a"), .integer(0)], [.integer(10), .text("b"), .integer(0)],
            [.integer(42), .text("c"), .integer(0)],
        ])
        try db.execute("INSERT INTO ticket(title) VALUES ('4')")
        #expect(db.lastInsertedRowID == 4, "AUTOINCREMENT does not reuse the deleted id 3")
    }

    @Test func rebuildTableThatBreaksAViewChangesNothing() throws {
        let before = try contents("event")
        let error = try #require(#expect(throws: SQLiteStoreError.self) {
            try inStep(enforcingForeignKeys: false) {
                try db.rebuildTable(
                    "event",
                    definition: "id INTEGER PRIMARY KEY, calendar_id INTEGER NOT NULL REFERENCES calendar(id), starts_on TEXT, note TEXT")
            }
        })
        #expect(error.reason == .dependentSchemaObject(.view("event_title"), column: "title", table: "event"))
        #expect(try contents("event") == before)
        #expect(try db.indexes(on: "event").count == 2)
    }

    @Test func rebuildTableThatOrphansRowsFailsWithTheirList() throws {
        let before = try contents("event")
        let error = try #require(#expect(throws: SQLiteError.self) {
            try inStep(enforcingForeignKeys: true) {
                try db.rebuildTable(
                    "event",
                    definition: "id INTEGER PRIMARY KEY, calendar_id INTEGER NOT NULL, title TEXT, starts_on TEXT, note TEXT",
                    copying: ["id": "id + 1000"])
            }
        })
        #expect(error.isForeignKeyViolation)
        #expect(error.foreignKeyViolations.count == 50)
        #expect(error.foreignKeyViolations.first?.table == "attendee")
        #expect(error.foreignKeyViolations.first?.parentTable == "event")
        #expect(error.description.contains("attendee rowid 1 → event"))
        #expect(try contents("event") == before)
    }

    // MARK: The tokenizer behind dropColumn

    @Test func tableDefinitionSplitsOnlyTopLevelCommas() throws {
        let sql = """
            CREATE TABLE "odd, name"(
                a INTEGER DEFAULT (1 + 2), -- a comment, with a comma
                "b, c" TEXT CHECK (b IN ('x,', 'y)')),
                [d] REAL, /* another, one */
                PRIMARY KEY (a, "b, c") -- a trailing comment
            ) WITHOUT ROWID -- the end
            """
        let (items, options) = try #require(SQLTokenizer(sql).tableDefinition())
        #expect(items.count == 4)
        #expect(items[0] == "a INTEGER DEFAULT (1 + 2)")
        #expect(items[3] == "PRIMARY KEY (a, \"b, c\")")
        #expect(items[1] == "\"b, c\" TEXT CHECK (b IN ('x,', 'y)'))")
        #expect(options == "WITHOUT ROWID")
        #expect(SQLTokenizer(items[1]).tokens().first?.value == "b, c")
        #expect(SQLTokenizer(items[3]).mentions("B, C"))
        #expect(!SQLTokenizer("CHECK (x = 'd')").mentions("d"))
    }
}
