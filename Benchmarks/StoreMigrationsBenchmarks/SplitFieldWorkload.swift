import Foundation
import StoreMigrations
import StoreMigrationsSQLite
#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif

/// The guide's full-name split: two columns added, per-row Swift string work, the old column
/// dropped. Baseline: the same ALTERs and a cursor + prepared UPDATE loop on the C API.
struct SplitFieldWorkload {
    let rows: Int
    let timer: Timer

    static let names = ["García López, Ana", "Pérez Ruiz, Luis", "Cher", "Martín Gómez, Carmen", "Torres Gil, Elena"]

    func run() throws -> [Measurement] {
        let fixture = try SQLiteFixture(
            name: "split-field", rows: rows,
            schema: "CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT NOT NULL, full_name TEXT)",
            insert: "INSERT INTO note(title, full_name) VALUES (?, ?)",
            values: { ["note \($0)", $0 % 50 == 0 ? nil : Self.names[$0 % Self.names.count]] })
        defer { fixture.remove() }
        var work = fixture.template

        func library() throws {
            let coordinator = MigrationCoordinator(appVersion: "2.0")
            try coordinator.manager("library", store: SQLiteStore(url: work)).register("2.0") { db in
                try db.addColumn("last_names", type: .text, to: "note")
                try db.addColumn("first_name", type: .text, to: "note")
                try db.transformRows(in: "note", columns: ["full_name", "last_names", "first_name"]) { row in
                    guard let fullName: String = try row["full_name"] else { return nil }
                    let (lastNames, firstName) = splitFullName(fullName)
                    return ["last_names": DatabaseValue(lastNames), "first_name": DatabaseValue(firstName)]
                }
                try db.dropColumn("full_name", from: "note")
            }
            try coordinator.run()
        }
        func baseline() throws {
            let db = try RawSQLite(path: work.path)
            try db.execute("""
                PRAGMA journal_mode = WAL; BEGIN IMMEDIATE;
                ALTER TABLE note ADD COLUMN last_names TEXT; ALTER TABLE note ADD COLUMN first_name TEXT
                """)
            let select = try db.prepare("SELECT id, full_name FROM note WHERE full_name IS NOT NULL ORDER BY id")
            let update = try db.prepare("UPDATE note SET last_names = ?, first_name = ? WHERE id = ?")
            while try db.step(select) {
                let id = sqlite3_column_int64(select, 0)
                let (lastNames, firstName) = splitFullName(columnText(select, 1))
                bindText(update, 1, lastNames)
                bindText(update, 2, firstName)
                sqlite3_bind_int64(update, 3, id)
                _ = try db.step(update)
                sqlite3_reset(update)
            }
            sqlite3_finalize(select)
            sqlite3_finalize(update)
            try db.execute("ALTER TABLE note DROP COLUMN full_name; COMMIT")
        }

        let (libraryRuns, baselineRuns) = try timer.compare(
            prepareLibrary: { work = try fixture.copy("library.sqlite") }, library: library,
            prepareBaseline: { work = try fixture.copy("baseline.sqlite") }, baseline: baseline)
        return [Measurement(
            workload: "split field (\(rows) rows)", metric: "migration vs C API loop", runs: timer.runs,
            libraryMedian: libraryRuns.median, baselineMedian: baselineRuns.median, target: "≤ 1.10×")]
    }
}
