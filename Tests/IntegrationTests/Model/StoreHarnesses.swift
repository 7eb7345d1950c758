import Foundation
import StoreMigrations
import StoreMigrationsSQLite
import TestSupport

/// The four store kinds a scenario runs on, each counting bodies' work in its own data.
enum StoreHarnesses {
    /// Runs `scenario` on the real coordinator with its store kind, stores kept under `folder`.
    static func outcome(of scenario: ModelScenario, in folder: TemporaryFolder) throws -> ModelOutcome {
        let count = scenario.managers.count
        let folder = folder.url
        switch scenario.storeKind {
        case .inMemory:
            // One object per manager for the whole scenario: the records live in it.
            let stores = (0..<count).map { InMemoryStore<[String: Int]>([:], name: "m\($0) store") }
            let harness = StoreHarness<InMemoryStore<[String: Int]>>(
                makeStore: { stores[$0] }, bump: { content, key, by in content[key, default: 0] += by },
                counters: { store, _ in store.contents })
            return try RealRunner(scenario: scenario, harness: harness).outcome()
        case .preferences:
            let harness = StoreHarness<PreferencesStore>(
                makeStore: { PreferencesStore(url: folder.appendingPathComponent("m\($0).json")) }, bump: bumpPreferences,
                counters: { store, keys in try preferenceCounters(store.read(), keys) })
            return try RealRunner(scenario: scenario, harness: harness).outcome()
        case .userDefaults:
            let harness = StoreHarness<UserDefaultsStore>(
                makeStore: { UserDefaultsStore(suiteName: folder.appendingPathComponent("m\($0)").path) }, bump: bumpPreferences,
                counters: { store, keys in try preferenceCounters(store.read(), keys) })
            return try RealRunner(scenario: scenario, harness: harness).outcome()
        case .sqlite:
            // The counters' table exists before the first launch: batches may not change the schema.
            for index in 0..<count {
                try SQLiteStore(url: folder.appendingPathComponent("m\(index).sqlite")).transaction { _, db in
                    try db.execute("CREATE TABLE runs(key TEXT PRIMARY KEY NOT NULL, count INTEGER NOT NULL)")
                }
            }
            let harness = StoreHarness<SQLiteStore>(
                makeStore: { SQLiteStore(url: folder.appendingPathComponent("m\($0).sqlite")) },
                bump: { db, key, by in
                    try db.execute(
                        "INSERT INTO runs(key, count) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET count = count + excluded.count",
                        arguments: [.text(key), .integer(Int64(by))])
                },
                counters: { store, _ in
                    try store.read { db in
                        Dictionary(uniqueKeysWithValues: try db.rows("SELECT key, count FROM runs").map {
                            (try $0[0] as String, try $0[1] as Int)
                        })
                    }
                })
            return try RealRunner(scenario: scenario, harness: harness).outcome()
        }
    }

    /// A counter under `runs`, keyed without the dots and dashes of versions.
    private static func preferenceKey(_ key: String) -> String {
        key.replacingOccurrences(of: ".", with: "_").replacingOccurrences(of: "-", with: "s").replacingOccurrences(of: "@", with: "_v")
    }

    private static let bumpPreferences: @Sendable (inout Preferences, String, Int) throws -> Void = { prefs, key, by in
        let path: PreferenceKeyPath = ["runs", preferenceKey(key)]
        try prefs.set((prefs.int(path) ?? 0) + by, for: path)
    }

    private static func preferenceCounters(_ prefs: Preferences, _ keys: [String]) -> [String: Int] {
        var counters: [String: Int] = [:]
        for key in keys {
            if let count = prefs.int(["runs", preferenceKey(key)]) { counters[key] = count }
        }
        return counters
    }
}
