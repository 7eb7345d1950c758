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

/// A statement reused across a schema change reads the columns of the new schema, and no row
/// access can trap.
@Suite struct SQLiteStatementSchemaTests {
    let scratch: TemporaryFolder
    let store: SQLiteStore

    init() throws {
        scratch = try TemporaryFolder()
        store = SQLiteStore(url: scratch.file("statements.sqlite"))
        try store.write { db in
            try db.execute("CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT, note TEXT); INSERT INTO item VALUES (1, 'one', 'n')")
        }
    }

    @Test func statementReusedAcrossAddColumnSeesTheNewColumn() throws {
        try store.apply(sqliteStep("1.1") { db in
            let select = try db.prepare("SELECT * FROM item")
            #expect(try select.rows().first?.columnNames == ["id", "name", "note"])
            try db.addColumn("guid", type: .text, to: "item", defaultValue: .text("g"))
            let row = try #require(try select.rows().first)
            #expect(row.columnNames == ["id", "name", "note", "guid"])
            #expect(try row["guid"] as String == "g")
            #expect(try row[3] as String == "g")
        })
    }

    @Test func statementReusedAcrossDropColumnThrowsTypedErrorsInsteadOfTrapping() throws {
        try store.apply(sqliteStep("1.1") { db in
            let select = try db.prepare("SELECT * FROM item")
            #expect(try select.rows().first?.values.count == 3)
            try db.dropColumn("note", from: "item")
            let row = try #require(try select.rows().first)
            #expect(row.columnNames == ["id", "name"])
            #expect(row.values == [.integer(1), .text("one")])
            let byName = #expect(throws: SQLiteError.self) { _ = try row["note"] as String }
            #expect(byName?.code == SQLITE_ERROR)
            #expect(byName?.message == "the row has no column \"note\"; its columns are id, name")
            #expect(byName?.sql == "SELECT * FROM item")
            let byIndex = #expect(throws: SQLiteError.self) { _ = try row[2] as String }
            #expect(byIndex?.code == SQLITE_RANGE)
            #expect(byIndex?.message == "column index 2 is out of range: the row has 2 columns (id, name)")
        })
    }

    /// Same column count, other names: the layout must still be read again.
    @Test func statementReusedAcrossRenameColumnSeesTheNewName() throws {
        try store.write { db in
            let select = try db.prepare("SELECT * FROM item")
            _ = try select.rows()
            try db.renameColumn("note", to: "remark", in: "item")
            let row = try #require(try select.rows().first)
            #expect(row.columnNames == ["id", "name", "remark"])
            #expect(try row["remark"] as String == "n")
        }
    }

    /// A row whose layout names more or fewer columns than it has values (never made by this
    /// module, but `Row` must not trap on it either).
    @Test func mismatchedLayoutIsAnErrorNotATrap() throws {
        let wide = Row(values: [.integer(1)], layout: Row.Layout(names: ["a", "b"], sql: "SELECT a, b", path: "p"))
        let error = #expect(throws: SQLiteError.self) { _ = try wide["b"] as Int }
        #expect(error?.message == "the row has no column \"b\"; its columns are a, b")
        let narrow = Row(values: [.integer(1), .text("x")], layout: Row.Layout(names: ["a"], sql: "SELECT a", path: "p"))
        let mismatch = #expect(throws: SQLiteError.self) { _ = try narrow[1] as Int }
        #expect(mismatch?.code == SQLITE_MISMATCH)
        #expect(mismatch?.message == ##"column "#1" holds "x", which is not a Int"##)
    }
}
