import Foundation
import StoreMigrations
import StoreMigrationsSQLite

/// A rolling deploy on one store, for `CrashRunner rolling`: processes of app 1.0 and app 2.0
/// started together on the same store. App 1.0 registers `0.1` … `0.9`, `1.0`; app 2.0 those
/// and `1.1` … `1.9`, `2.0`. Each body counts its run in the store, in its step's transaction
/// (the preferences key `runs.v<major>_<minor>`, or a row of table `runs` in the database), so a
/// count of 2 is a step that ran twice. Each app has an app-version hook, so that its record
/// says which app version last launched on it.
struct RollingScenario {
    enum Store: String { case prefs, library }

    static let managerName = "app"
    static let preferencesName = "settings.json"
    static let databaseName = "library.sqlite"

    let directory: URL
    let store: Store
    let appVersion: Version

    /// The versions app `appVersion` registers.
    static func versions(upTo appVersion: Version) -> [Version] {
        (1...20).compactMap { Version("\($0 / 10).\($0 % 10)") }.filter { $0 <= appVersion }
    }

    func coordinator() throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: appVersion)
        let appVersion = appVersion
        switch store {
        case .prefs:
            let app = try coordinator.manager(
                Self.managerName, store: PreferencesStore(url: directory.appendingPathComponent(Self.preferencesName)))
            for version in Self.versions(upTo: appVersion) {
                let key = PreferenceKeyPath(["runs", "v" + version.description.replacingOccurrences(of: ".", with: "_")])
                app.register(version) { prefs in try prefs.set((prefs.int(key) ?? 0) + 1, for: key) }
            }
            app.onAppVersionChange { _, _ in }
        case .library:
            let app = try coordinator.manager(
                Self.managerName, store: SQLiteStore(url: directory.appendingPathComponent(Self.databaseName)))
            for version in Self.versions(upTo: appVersion) {
                app.register(version) { db in
                    try db.execute("CREATE TABLE IF NOT EXISTS runs(version TEXT NOT NULL, app TEXT NOT NULL)")
                    try db.execute(
                        "INSERT INTO runs(version, app) VALUES (?, ?)",
                        arguments: [.text(version.description), .text(appVersion.description)])
                }
            }
            app.onAppVersionChange { _, _ in }
        }
        return coordinator
    }
}
