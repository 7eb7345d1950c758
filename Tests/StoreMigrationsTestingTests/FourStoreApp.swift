import Foundation
import StoreMigrations
import StoreMigrationsSQLite
import StoreMigrationsSQLiteTesting
import StoreMigrationsTesting

/// An app with four stores (a preferences file, a `UserDefaults` suite, a SQLite library and a
/// thumbnail cache) and migrations from 1.0 to 2.0; a `Bug` makes one of them wrong on the
/// upgrade path only, where rows or keys exist, as such bugs are in real apps.
enum FourStoreApp {
    enum Bug: Sendable {
        case none
        /// 2.0 rebuilds a library with notes to add `pinned`, and writes `body` without its default.
        case dropsDefault
        /// 2.0 finds notes already there and "only" backfills, forgetting to add `pinned`.
        case forgetsColumn
        /// 2.0 rebuilds a library with notes to add `pinned`, right after `id` where a fresh
        /// install has it last.
        case reordersColumns
        /// 1.1 removes the user's `sortOrder` and forgets to write it as `notes.sortOrder`.
        case losesPreferenceKey
    }

    static func tester(_ bug: Bug = .none) -> UpgradeTester {
        UpgradeTester(kinds: [.sqlite]) { location in try coordinator(at: location, bug: bug) }
    }

    static func coordinator(at location: StoreLocation, bug: Bug) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let preferences = try coordinator.manager("preferences", store: PreferencesStore(url: location.url("Preferences.json")))
        let settings = try coordinator.manager("settings", store: UserDefaultsStore(suiteName: location.suiteName("settings")))
        let library = try coordinator.manager("library", store: SQLiteStore(url: location.url("Library.sqlite")))
        let thumbnails = try coordinator.manager("thumbnails", store: CacheStore(directory: location.url("Thumbnails")))

        preferences.register("1.1") { defaults in
            if let sortOrder = defaults.removeValue(for: "sortOrder") {
                if bug != .losesPreferenceKey { try defaults.set(sortOrder, for: "notes.sortOrder") }
            } else {
                try defaults.set("date", for: "notes.sortOrder")
            }
        }
        preferences.register("2.0") { defaults in try defaults.set(true, for: "notes.showCategories") }

        settings.register("1.0") { defaults in try defaults.set(false, for: "syncEnabled") }
        settings.register("1.2") { defaults in try defaults.set(60, for: "sync.interval") }

        library.register("1.0") { db in
            try db.execute("CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT DEFAULT '')")
        }
        library.register("1.1") { db in try db.execute("ALTER TABLE note ADD COLUMN created_at TEXT") }
        library.register("1.2", dependsOn: [preferences.migration("1.1")]) { db in
            try db.execute("""
                CREATE TABLE tag(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
                CREATE INDEX note_title ON note(title);
                """)
        }
        library.register("2.0") { db in
            let notes = try db.scalar("SELECT count(*) FROM note", as: Int.self) ?? 0
            switch bug {
            case .dropsDefault where notes > 0:
                try db.execute("""
                    CREATE TABLE note_new(
                        id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT, created_at TEXT,
                        pinned INTEGER NOT NULL DEFAULT 0);
                    INSERT INTO note_new(id, title, body, created_at) SELECT id, title, body, created_at FROM note;
                    DROP TABLE note;
                    ALTER TABLE note_new RENAME TO note;
                    CREATE INDEX note_title ON note(title);
                    """)
            case .reordersColumns where notes > 0:
                try db.execute("""
                    CREATE TABLE note_new(
                        id INTEGER PRIMARY KEY, pinned INTEGER NOT NULL DEFAULT 0, title TEXT NOT NULL,
                        body TEXT DEFAULT '', created_at TEXT);
                    INSERT INTO note_new(id, title, body, created_at) SELECT id, title, body, created_at FROM note;
                    DROP TABLE note;
                    ALTER TABLE note_new RENAME TO note;
                    CREATE INDEX note_title ON note(title);
                    """)
            case .forgetsColumn where notes > 0:
                try db.execute("UPDATE note SET created_at = '2024-01-01' WHERE created_at IS NULL")
            default:
                try db.execute("ALTER TABLE note ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0")
            }
        }
        thumbnails.register("1.1") { cache in try cache.removeAll() }
        thumbnails.register("2.0") { cache in try cache.removeAll() }
        return coordinator
    }

    /// Seeds the stores at `version` with a user's data: a sort order, notes, a thumbnail.
    static func seed(_ tester: UpgradeTester, at version: Version, into folder: URL) throws -> UpgradeFixture {
        try tester.seed(at: version, into: folder) { stores in
            try stores.editPreferences("preferences") { defaults in
                try defaults.set("title", for: version < "1.1" ? "sortOrder" : "notes.sortOrder")
            }
            try stores.store("library", as: SQLiteStore.self).write { db in
                for id in 1...3 { try db.execute("INSERT INTO note(id, title) VALUES (?, ?)", arguments: [.integer(Int64(id)), .text("Note \(id)")]) }
            }
            let thumbnails = try stores.store("thumbnails", as: CacheStore.self).directory
            try FileManager.default.createDirectory(at: thumbnails, withIntermediateDirectories: true)
            try Data([1, 2, 3]).write(to: thumbnails.appendingPathComponent("note-1.png"))
        }
    }
}
