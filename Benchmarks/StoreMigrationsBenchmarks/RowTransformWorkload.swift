import Foundation
import StoreMigrations
#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif

/// The blog's GUID stamping: a Swift-computed value written to every row, in one migration,
/// through `transformRows`. Baseline: a SELECT cursor and one prepared UPDATE on SQLite's C API.
struct RowTransformWorkload {
    let rows: Int
    let timer: Timer

    func run() throws -> [Measurement] {
        let fixture = try SQLiteFixture(
            name: "row-transform", rows: rows,
            schema: "CREATE TABLE event(id INTEGER PRIMARY KEY, name TEXT NOT NULL, guid TEXT)",
            insert: "INSERT INTO event(name) VALUES (?)", values: { ["event \($0)"] })
        defer { fixture.remove() }
        var work = fixture.template

        func library() throws {
            let coordinator = MigrationCoordinator(appVersion: "2.0")
            try coordinator.manager("library", store: SQLiteStore(url: work)).register("2.0") { db in
                try db.transformRows(in: "event", columns: ["id", "guid"]) { row in
                    ["guid": .text(computedGUID(try row["id"]))]
                }
            }
            try coordinator.run()
        }
        func baseline() throws {
            let db = try RawSQLite(path: work.path)
            try db.execute("PRAGMA journal_mode = WAL; BEGIN IMMEDIATE")
            let select = try db.prepare("SELECT id FROM event ORDER BY id")
            let update = try db.prepare("UPDATE event SET guid = ? WHERE id = ?")
            defer {
                sqlite3_finalize(select)
                sqlite3_finalize(update)
            }
            while try db.step(select) {
                let id = sqlite3_column_int64(select, 0)
                bindText(update, 1, computedGUID(id))
                sqlite3_bind_int64(update, 2, id)
                _ = try db.step(update)
                sqlite3_reset(update)
            }
            try db.execute("COMMIT")
        }

        let (libraryRuns, baselineRuns) = try timer.compare(
            measuringMemory: true, prepareLibrary: { work = try fixture.copy("library.sqlite") }, library: library,
            prepareBaseline: { work = try fixture.copy("baseline.sqlite") }, baseline: baseline)
        try verify(work)
        return [Measurement(
            workload: "row transform (\(rows) rows)", metric: "transformRows vs C API loop", runs: timer.runs,
            libraryMedian: libraryRuns.median, baselineMedian: baselineRuns.median, target: "≤ 1.10×; peak ≤ baseline + 32 MiB",
            libraryPeakMiB: libraryRuns.peakMiB, baselinePeakMiB: baselineRuns.peakMiB)]
    }

    private func verify(_ url: URL) throws {
        let db = try RawSQLite(path: url.path)
        let missing = try db.scalarText("SELECT count(*) FROM event WHERE guid IS NULL")
        precondition(missing == "0", "the baseline left rows without a GUID")
    }
}
