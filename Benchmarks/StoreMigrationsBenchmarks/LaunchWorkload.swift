import Foundation
import StoreMigrations
#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif

/// The launch of an app whose three real stores (preferences, SQLite, cache) are up to date with
/// 100 applied migrations each: a new coordinator, its registrations and `run()`. Baseline: open
/// the three files and read the three levels by hand.
struct LaunchWorkload {
    let migrationsPerStore: Int
    let timer: Timer

    func run() throws -> [Measurement] {
        let directory = try temporaryDirectory("launch")
        defer { try? FileManager.default.removeItem(at: directory) }
        let prefsURL = directory.appendingPathComponent("prefs.json")
        let databaseURL = directory.appendingPathComponent("library.sqlite")
        let cacheURL = directory.appendingPathComponent("cache", isDirectory: true)
        try Data(#"{"theme": "dark", "fontSize": 14}"#.utf8).write(to: prefsURL)

        func launch() throws -> MigrationReport {
            let coordinator = MigrationCoordinator(appVersion: Version(migrationsPerStore))
            let prefs = try coordinator.manager("prefs", store: PreferencesStore(url: prefsURL))
            let library = try coordinator.manager("library", store: SQLiteStore(url: databaseURL))
            let cache = try coordinator.manager("cache", store: CacheStore(directory: cacheURL))
            for version in 1...migrationsPerStore {
                prefs.register(Version(version)) { _ in }
                library.register(Version(version)) { _ in }
                cache.register(Version(version)) { _ in }
            }
            return try coordinator.run()
        }
        // The first launch applies all 300 migrations; the timed ones find nothing to do.
        let firstLaunch = try launch()
        precondition(firstLaunch.steps.count == 3 * migrationsPerStore)

        var levels: [String] = []
        // One side after the other rather than taking turns: a launch's store closes on another
        // thread just after `run()` returns, and would slow a read by hand made right then.
        let libraryTime = try timer.median {
            let report = try launch()
            precondition(!report.didRunAnything)
        }
        let baselineTime = try timer.median {
            levels = try readLevelsByHand(prefsURL: prefsURL, databaseURL: databaseURL, cacheURL: cacheURL)
        }
        guard levels == Array(repeating: "\(migrationsPerStore)", count: 3) else { fatalError("levels read by hand: \(levels)") }
        return [Measurement(
            workload: "up-to-date launch (3 stores × \(migrationsPerStore) applied)", metric: "run() vs reading 3 levels by hand",
            runs: timer.runs, libraryMedian: libraryTime, baselineMedian: baselineTime, target: "≤ 1.5× and < 1 ms")]
    }

    private func readLevelsByHand(prefsURL: URL, databaseURL: URL, cacheURL: URL) throws -> [String] {
        func level(inJSON url: URL, key: String, manager: String) throws -> String {
            let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any]
            let levels = object?[key] as? [String: Any]
            return ((levels?[manager] as? [String: Any])?["level"] as? String) ?? ""
        }
        let db = try RawSQLite(path: databaseURL.path)
        let libraryLevel = try db.scalarText("SELECT level FROM store_migrations_levels WHERE manager = 'library'") ?? ""
        return [
            try level(inJSON: prefsURL, key: "StoreMigrations.levels", manager: "prefs"),
            libraryLevel,
            try level(inJSON: cacheURL.appendingPathComponent(".store-migrations.json"), key: "levels", manager: "cache"),
        ]
    }
}
