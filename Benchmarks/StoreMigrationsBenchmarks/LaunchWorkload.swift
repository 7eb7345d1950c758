import Foundation
import StoreMigrations
import StoreMigrationsSQLite
#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif

/// The launch of an app whose three real stores (preferences, SQLite, cache) are up to date with
/// 100 applied migrations each: a new coordinator, its registrations and `run()`, which reads
/// every store's applied set (the database's from its history table) and plans nothing to do.
/// Baseline: open the three files and read the three levels by hand.
struct LaunchWorkload {
    let migrationsPerStore: Int
    let timer: Timer

    /// The three stores' locations.
    private struct Files {
        let prefs: URL
        let database: URL
        let cache: URL
    }

    func run() throws -> [Measurement] {
        let directory = try temporaryDirectory("launch")
        defer { try? FileManager.default.removeItem(at: directory) }
        let files = Files(
            prefs: directory.appendingPathComponent("prefs.json"),
            database: directory.appendingPathComponent("library.sqlite"),
            cache: directory.appendingPathComponent("cache", isDirectory: true))
        try Data(#"{"theme": "dark", "fontSize": 14}"#.utf8).write(to: files.prefs)

        // The first launch applies all 300 migrations; the timed ones find nothing to do.
        let firstLaunch = try configure(files).coordinator.run()
        precondition(firstLaunch.steps.count == 3 * migrationsPerStore)
        // What a timed launch reads, checked once outside the timing: every store records the
        // applied set (not only a level), and the database keeps a history row (with its time)
        // per migration, so that planning parses 3 × 100 applied versions, not three levels.
        let (_, prefs, library, cache) = try configure(files)
        for record in [try prefs.record(), try library.record(), try cache.record()] {
            precondition(record.applied.count == migrationsPerStore && record.baseline == nil, "record read: \(record)")
        }
        let libraryRecord = try library.record()
        precondition(libraryRecord.applied.allSatisfy { $0.appliedAt != nil }, "history times not read: \(libraryRecord)")
        let historyRows = try RawSQLite(path: files.database.path).integers("SELECT count(*) FROM store_migrations_history")
        precondition(historyRows == [Int64(migrationsPerStore)], "history rows: \(historyRows)")

        var levels: [String] = []
        // Taking turns, like the other workloads: a launch with nothing to do reports on the
        // caller's thread and closes its short-lived SQLite connection before returning, so
        // nothing of it runs on during the read by hand that follows.
        let (librarySamples, baselineSamples) = try timer.compare(
            library: { try upToDateLaunch(files) },
            baseline: { levels = try readLevelsByHand(files) })
        guard levels == Array(repeating: "\(migrationsPerStore)", count: 3) else { fatalError("levels read by hand: \(levels)") }
        return [Measurement(
            workload: "up-to-date launch (3 stores × \(migrationsPerStore) applied)",
            metric: "run() from a new coordinator vs reading 3 levels by hand",
            runs: timer.runs, libraryMedian: librarySamples.median, baselineMedian: baselineSamples.median,
            target: "≤ 1.5× and < 1 ms")]
    }

    /// A new coordinator with its three managers and 300 registrations, as an app's launch
    /// builds it.
    private func configure(_ files: Files) throws -> (
        coordinator: MigrationCoordinator, prefs: MigrationManager<PreferencesStore>,
        library: MigrationManager<SQLiteStore>, cache: MigrationManager<CacheStore>
    ) {
        let coordinator = MigrationCoordinator(appVersion: Version(migrationsPerStore))
        let prefs = try coordinator.manager("prefs", store: PreferencesStore(url: files.prefs))
        let library = try coordinator.manager("library", store: SQLiteStore(url: files.database))
        let cache = try coordinator.manager("cache", store: CacheStore(directory: files.cache))
        for version in 1...migrationsPerStore {
            prefs.register(Version(version)) { _ in }
            library.register(Version(version)) { _ in }
            cache.register(Version(version)) { _ in }
        }
        return (coordinator, prefs, library, cache)
    }

    /// The timed launch. Not inlined, so that `valgrind --tool=callgrind --toggle-collect` can
    /// count its instructions apart from the workload's set-up.
    @inline(never)
    private func upToDateLaunch(_ files: Files) throws {
        let report = try configure(files).coordinator.run()
        precondition(!report.didRunAnything)
    }

    /// The baseline, not inlined either.
    @inline(never)
    private func readLevelsByHand(_ files: Files) throws -> [String] {
        func level(inJSON url: URL, key: String, manager: String) throws -> String {
            let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any]
            let levels = object?[key] as? [String: Any]
            return ((levels?[manager] as? [String: Any])?["level"] as? String) ?? ""
        }
        let db = try RawSQLite(path: files.database.path)
        let libraryLevel = try db.scalarText("SELECT level FROM store_migrations_levels WHERE manager = 'library'") ?? ""
        return [
            try level(inJSON: files.prefs, key: "StoreMigrations.levels", manager: "prefs"),
            libraryLevel,
            try level(inJSON: files.cache.appendingPathComponent(".store-migrations.json"), key: "levels", manager: "cache"),
        ]
    }
}
