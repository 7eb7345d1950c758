import Foundation
import StoreMigrations

/// Version 2.0 of the notes app: the migrations its three stores need, as the seed documents
/// describe them. Registered at every launch; only the pending ones run.
enum NotesMigrations {
    static let appVersion: Version = "2.0"

    /// Makes a coordinator with the app's three managers and their migrations.
    static func coordinator(for app: LegacyNotesApp) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: appVersion)
        let preferences = try coordinator.manager("preferences", store: PreferencesStore(url: app.preferencesURL))
        let library = try coordinator.manager("library", store: SQLiteStore(url: app.databaseURL))
        let thumbnails = try coordinator.manager("thumbnails", store: CacheStore(directory: app.thumbnailsURL))
        // A cache written by a newer version is simply thrown away and rebuilt.
        thumbnails.newerStorePolicy = .reset

        registerPreferences(preferences)
        registerLibrary(library, after: preferences)
        // Thumbnails are named after notes' GUIDs from 2.0 on: wipe them once the GUIDs exist.
        thumbnails.register("2.0", dependsOn: [library.migration("1.1")]) { cache in
            try cache.removeAll()
        }
        return coordinator
    }

    /// MTMigration's use case: keys renamed and retired between versions.
    private static func registerPreferences(_ preferences: MigrationManager<PreferencesStore>) {
        preferences.register("1.1") { defaults in
            try defaults.renameKey("showHelp", to: "onboarding.showHelp")
            try defaults.renameKey("sortOrder", to: "notes.sortOrder")
        }
        preferences.register("2.0") { defaults in
            try defaults.renameKey("fontSize", to: "appearance.fontSize")
            defaults.removeValue(for: "legacyFlag")
            try defaults.set(true, for: "notes.showCategories")
        }
    }

    private static func registerLibrary(_ library: MigrationManager<SQLiteStore>, after preferences: MigrationManager<PreferencesStore>) {
        // The blog's first compatibility level: every event and tag gets a GUID.
        library.register("1.1") { db in
            for table in ["event", "tag"] {
                try db.addColumn("guid", type: .text, to: table)
                try db.transformRows(in: table, columns: ["guid"]) { _ in ["guid": .text(UUID().uuidString)] }
                try db.createIndex("\(table)_guid", on: table, columns: ["guid"], unique: true)
            }
        }
        // The guide's lightweight migration: a renamed attribute keeps its data.
        library.register("1.2") { db in
            try db.renameColumn("date", to: "created_at", in: "note")
        }
        // The guide's heavyweight migrations. The 2.0 preferences show categories, so they must
        // be migrated first.
        library.register("2.0", dependsOn: [preferences.migration("1.1")]) { db in
            try splitFullName(in: db)
        }
        library.register("2.0-1") { db in
            try extractCategories(in: db)
        }
    }

    /// "apellido1 apellido2, nombre" becomes `last_names` and `first_name`; a name without a
    /// comma is kept whole as the first name.
    private static func splitFullName(in db: Database) throws {
        try db.addColumn("last_names", type: .text, to: "note")
        try db.addColumn("first_name", type: .text, to: "note")
        try db.transformRows(in: "note", columns: ["full_name", "last_names", "first_name"]) { row in
            guard let fullName: String = try row["full_name"] else { return nil }
            let parts = fullName.split(separator: ",", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            return parts.count == 2
                ? ["last_names": .text(parts[0]), "first_name": .text(parts[1])]
                : ["last_names": .null, "first_name": .text(fullName)]
        }
        try db.dropColumn("full_name", from: "note")
    }

    /// The `category` text of each note becomes a row of a `category` table, related to notes
    /// many-to-many; empty and missing categories relate to nothing.
    private static func extractCategories(in db: Database) throws {
        try db.execute("""
            CREATE TABLE category(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE COLLATE NOCASE);
            CREATE TABLE note_category(
                note_id INTEGER NOT NULL REFERENCES note(id),
                category_id INTEGER NOT NULL REFERENCES category(id),
                PRIMARY KEY(note_id, category_id));
            INSERT OR IGNORE INTO category(name)
                SELECT DISTINCT trim(category) FROM note WHERE trim(category) <> '' ORDER BY trim(category);
            INSERT INTO note_category(note_id, category_id)
                SELECT note.id, category.id FROM note JOIN category ON category.name = trim(note.category);
            """)
        try db.dropColumn("category", from: "note")
    }
}
