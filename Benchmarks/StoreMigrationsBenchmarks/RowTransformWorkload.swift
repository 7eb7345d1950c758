import Foundation
import StoreMigrations
import StoreMigrationsSQLite
#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif

/// The blog's GUID stamping: a Swift-computed value written to every row, in one migration,
/// through `transformRows`. Baseline: a SELECT cursor and one prepared UPDATE on SQLite's C API.
/// Second baseline: the same C-API loop with the store's transaction guard rebuilt on the C API
/// (``RawTransactionGuard``: the commit hook and the authorizer for the length of the loop, the
/// per-statement checks), so that its ratio to the plain loop is the guard's cost, in the same run.
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
        let libraryErrors = try RawTransactionGuard.LibraryErrors(directory: fixture.directory)

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
        // `baseline` with the guard: armed after BEGIN and disarmed before COMMIT, as the store
        // does around a body; each run of a statement checked as `Statement.step()` checks it.
        func guardedBaseline() throws {
            let db = try RawSQLite(path: work.path)
            try db.execute("PRAGMA journal_mode = WAL; BEGIN IMMEDIATE")
            let guarding = RawTransactionGuard(handle: db.handle, errors: libraryErrors)
            guarding.arm()
            let selectSQL = "SELECT id FROM event ORDER BY id", updateSQL = "UPDATE event SET guid = ? WHERE id = ?"
            let select = try db.prepare(selectSQL)
            let update = try db.prepare(updateSQL)
            defer {
                sqlite3_finalize(select)
                sqlite3_finalize(update)
            }
            var starting = true
            while try db.step(select, sql: selectSQL, starting: starting, guardedBy: guarding) {
                starting = false
                let id = sqlite3_column_int64(select, 0)
                bindText(update, 1, computedGUID(id))
                sqlite3_bind_int64(update, 2, id)
                _ = try db.step(update, sql: updateSQL, starting: true, guardedBy: guarding)
                sqlite3_reset(update)
            }
            try guarding.disarm()
            try db.execute("COMMIT")
        }

        try RawTransactionGuard.selfTest(errors: libraryErrors)
        let (libraryRuns, baselineRuns, guardedRuns) = try timer.compare(
            measuringMemory: true, prepareLibrary: { work = try fixture.copy("library.sqlite") }, library: library,
            prepareBaseline: { work = try fixture.copy("baseline.sqlite") }, baseline: baseline,
            prepareSecond: { work = try fixture.copy("guarded.sqlite") }, second: guardedBaseline)
        for name in ["library.sqlite", "baseline.sqlite", "guarded.sqlite"] {
            try verify(fixture.directory.appendingPathComponent(name))
        }
        let workload = "row transform (\(rows) rows)"
        return [
            Measurement(
                workload: workload, metric: "transformRows vs C API loop", runs: timer.runs,
                libraryMedian: libraryRuns.median, baselineMedian: baselineRuns.median, target: "≤ 1.08×; peak ≤ baseline + 32 MiB",
                libraryPeakMiB: libraryRuns.peakMiB, baselinePeakMiB: baselineRuns.peakMiB),
            Measurement(
                workload: workload, metric: "transaction guard: guarded C API loop vs C API loop", runs: timer.runs,
                libraryMedian: guardedRuns.median, baselineMedian: baselineRuns.median, target: "≤ 1.02×",
                libraryPeakMiB: guardedRuns.peakMiB, baselinePeakMiB: baselineRuns.peakMiB),
        ]
    }

    private func verify(_ url: URL) throws {
        let db = try RawSQLite(path: url.path)
        let missing = try db.scalarText("SELECT count(*) FROM event WHERE guid IS NULL")
        precondition(missing == "0", "\(url.lastPathComponent): rows were left without a GUID")
    }
}
