#if canImport(CLibPQ)
import Foundation
import StoreMigrations
import StoreMigrationsPostgreSQL

/// The up-to-date check a replica makes at start-up (`plan().isUpToDate`, 100 migrations all
/// applied) against the statements `PostgreSQLStore.readRecords()` sends, sent by hand over raw
/// libpq: its first call on a connection just opened (the server process's caches cold) and a
/// later one, and the first call with the connection's opening included.
///
/// "Just opened": each side opens its connection outside the timing and warms it alike, with a
/// read-only transaction (`BEGIN READ ONLY`, `ROLLBACK`), as `PostgreSQLStore.read` does. The
/// later calls are made on two connections past their first.
extension PostgreSQLWorkload {
    func upToDateCheck(_ connection: String) throws -> [Measurement] {
        var store: PostgreSQLStore?
        var coordinator: MigrationCoordinator?
        var raw: RawLibPQ?
        // Both sides' earlier connections are closed first, and their server processes given a
        // moment to exit: one exiting while the other side's check runs slowed that check by a
        // third on two cores.
        func closeBoth() {
            coordinator = nil
            store = nil
            raw = nil
            usleep(20_000)
        }
        func openLibrary() throws {
            closeBoth()
            try openLibraryBesides()
        }
        func openLibraryBesides() throws {
            let opened = try PostgreSQLStore(connection, schema: "launch")
            try opened.read { _ in }
            store = opened
            coordinator = try Self.launchCoordinator(connection, store: opened)
        }
        func openBaseline() throws {
            closeBoth()
            try openBaselineBesides()
        }
        func openBaselineBesides() throws {
            let opened = try RawLibPQ(connection)
            try opened.execute("BEGIN READ ONLY")
            try opened.execute("ROLLBACK")
            raw = opened
        }
        func check() throws {
            let upToDate = try coordinator!.plan().isUpToDate
            precondition(upToDate)
        }
        func checkByHand() throws {
            try Self.readRecordsByHand(raw!)
        }
        let first = try launchTimer.compare(
            prepareLibrary: openLibrary, library: check, prepareBaseline: openBaseline, baseline: checkByHand)
        // Both connections open, each past its first call.
        closeBoth()
        try openLibraryBesides()
        try openBaselineBesides()
        try check()
        try checkByHand()
        let later = try launchTimer.compare(library: check, baseline: checkByHand)
        let opening = try launchTimer.compare(
            prepareLibrary: closeBoth,
            library: {
                coordinator = try Self.launchCoordinator(connection)
                try check()
            },
            prepareBaseline: closeBoth,
            baseline: {
                raw = try RawLibPQ(connection)
                try checkByHand()
            })
        _ = store
        return [
            Measurement(
                workload: "PostgreSQL: up-to-date check, first call on a new connection (100 applied)",
                metric: "plan().isUpToDate vs the same statements by hand over libpq",
                runs: launchTimer.runs, libraryMedian: first.library.median, baselineMedian: first.baseline.median, target: "≤ 2 ms"),
            Measurement(
                workload: "PostgreSQL: up-to-date check, later calls (100 applied)",
                metric: "plan().isUpToDate vs the same statements by hand over libpq",
                runs: launchTimer.runs, libraryMedian: later.library.median, baselineMedian: later.baseline.median, target: "(reported)"),
            Measurement(
                workload: "PostgreSQL: up-to-date check with connecting (100 applied)",
                metric: "a new store's plan().isUpToDate vs PQconnectdb and the same statements by hand",
                runs: launchTimer.runs, libraryMedian: opening.library.median, baselineMedian: opening.baseline.median,
                target: "(reported)"),
        ]
    }

    /// What `PostgreSQLStore.readRecords()` sends for the launch's schema, by hand.
    static func readRecordsByHand(_ raw: RawLibPQ) throws {
        let levels = "\"launch\".\"store_migrations_levels\"", history = "\"launch\".\"store_migrations_history\""
        let catalog = try raw.rows("SELECT to_regclass($1) IS NOT NULL, to_regclass($2) IS NOT NULL", parameters: [levels, history])
        precondition(catalog.first == ["t", "t"])
        let records = try raw.rowsOfEach("""
            BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;
            SELECT manager, level, app_version, baseline, to_jsonb(l) ->> 'progress' FROM \(levels) l;
            SELECT manager, version, extract(epoch FROM applied_at)::float8, duration_seconds, id
            FROM \(history);
            COMMIT
            """)
        precondition(records.count == 4 && records[1].count == 1 && records[2].count == 100)
    }
}
#endif
