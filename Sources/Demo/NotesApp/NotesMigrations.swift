import Foundation
import StoreMigrations
import StoreMigrationsSQLite

/// Version 2.0 of the notes app: the migrations its three stores need, as the seed documents
/// describe them. Registered at every launch; only the pending ones run.
package enum NotesMigrations {
    package static let appVersion: Version = "2.0"

    /// Makes a coordinator with the app's three managers and their migrations; `squashes: false`
    /// leaves the squashed migration out, so that a new install replays the whole history (the
    /// reference its upgrade test compares the squash with).
    package static func coordinator(for app: LegacyNotesApp, squashes: Bool = true) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: appVersion)
        let preferences = try coordinator.manager("preferences", store: PreferencesStore(url: app.preferencesURL))
        let library = try coordinator.manager("library", store: SQLiteStore(url: app.databaseURL))
        let thumbnails = try coordinator.manager("thumbnails", store: CacheStore(directory: app.thumbnailsURL))
        // A cache written by a newer version is simply thrown away and rebuilt.
        thumbnails.newerStorePolicy = .reset

        registerPreferences(preferences)
        registerLibrary(library, after: preferences, squashes: squashes)
        library.firstLaunchPolicy = legacyDatabaseAdoption(of: app)
        // Thumbnails are named after notes' GUIDs from 2.0 on: wipe them once the GUIDs exist.
        thumbnails.register("2.0", dependsOn: [library.migration("1.1-1")], options: .named("wipe thumbnails named by note ids")) { cache in
            try cache.removeAll()
        }
        return coordinator
    }

    /// MTMigration's use case: keys renamed and retired between versions.
    private static func registerPreferences(_ preferences: MigrationManager<PreferencesStore>) {
        preferences.register("1.1", options: .named("group onboarding and sort keys")) { defaults in
            try defaults.renameKey("showHelp", to: "onboarding.showHelp")
            try defaults.renameKey("sortOrder", to: "notes.sortOrder")
        }
        preferences.register("2.0", options: .named("group appearance keys, retire legacyFlag")) { defaults in
            try defaults.renameKey("fontSize", to: "appearance.fontSize")
            defaults.removeValue(for: "legacyFlag")
            try defaults.set(true, for: "notes.showCategories")
        }
    }

    private static func registerLibrary(
        _ library: MigrationManager<SQLiteStore>, after preferences: MigrationManager<PreferencesStore>, squashes: Bool
    ) {
        library.register("1.0", options: .named("the 1.0 notes database")) { db in try db.execute(LegacyNotesApp.databaseSchema) }
        // A new install creates the 1.2 tables at once instead of replaying 1.0 to 1.2; a 1.0
        // database (adopted at 1.0 below) is part-way through the range and runs the originals,
        // its event GUIDs batch by batch.
        if squashes {
            library.squash(from: "1.0", through: "1.2", options: .named("the 1.2 notes database")) { db in
                try db.migrateSchema(to: NotesSchema.v1_2)
            }
        }
        // The blog's first compatibility level: every event and tag gets a GUID. The schema and
        // the few tags in one step; the events, two a note, in a resumable one: each batch of
        // rows commits with the key it reached, so a launch killed part-way resumes after the
        // last batch instead of starting the table over.
        library.register("1.1", options: .named("guids for events and tags")) { db in
            try db.migrateSchema(to: NotesSchema.v1_1)
            try db.transformRows(in: "tag", columns: ["guid"], where: "guid IS NULL") { _ in ["guid": .text(UUID().uuidString)] }
        }
        library.registerResumable(
            "1.1-1", transformingRowsOf: "event", columns: ["guid"], where: "guid IS NULL",
            options: .named("fill event guids", fingerprint: "a random UUID a row")
        ) { _ in
            ["guid": .text(UUID().uuidString)]
        }
        // The guide's lightweight migration: a renamed attribute keeps its data.
        library.register("1.2", options: .named("rename note.date to created_at"), schema: NotesSchema.v1_2)
        // The guide's heavyweight migration. It waits for the preferences' 1.1 (their keys
        // renamed), the dependency registered here, so that no launch ever sees the 2.0 notes
        // beside the 1.0 preference keys.
        library.register(
            "2.0", dependsOn: [preferences.migration("1.1")],
            options: .named("author names split, categories in a table", fingerprint: "noteMapping 1"),
            schema: NotesSchema.v2_0, mappings: [NotesSchema.noteMapping])
    }

    /// The 1.0 app wrote its database without this library, so it has tables and no records: as
    /// such it would look new and take the squash. It is adopted at 1.0 instead, so that it runs
    /// the migrations after 1.0; the plan says so and writes nothing.
    private static func legacyDatabaseAdoption(of app: LegacyNotesApp) -> FirstLaunchPolicy<SQLiteStore> {
        let databaseURL = app.databaseURL
        return .decide { store in
            guard FileManager.default.fileExists(atPath: databaseURL.path),
                  try store.read({ db in try db.tableExists("note") })
            else { return .runAll }
            return .adopt(at: "1.0")
        }
    }
}
