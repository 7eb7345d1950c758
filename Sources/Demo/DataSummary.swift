import Foundation
import NotesApp
import StoreMigrations
import StoreMigrationsSQLite

/// A few lines that show what the stores hold, before and after migrating.
enum DataSummary {
    static func print(_ app: LegacyNotesApp) throws {
        let preferences = try PreferencesStore(url: app.preferencesURL).read()
        Console.line("  preferences: " + preferences.keys.joined(separator: ", "))
        let database = SQLiteStore(url: app.databaseURL)
        try database.read { db in
            let columns = try db.tableInfo("note").map(\.name).joined(separator: ", ")
            Console.line("  note columns: \(columns)")
            let withGUID = try db.tableInfo("event").contains { $0.name == "guid" }
                ? try db.scalar("SELECT count(*) FROM event WHERE guid IS NOT NULL", as: Int.self) ?? 0 : 0
            let events = try db.scalar("SELECT count(*) FROM event", as: Int.self) ?? 0
            Console.line("  events with a GUID: \(withGUID) of \(events)")
            if try db.tableExists("category") {
                let names = try db.rows("SELECT name FROM category ORDER BY name").map { row -> String in try row[0] }
                let links = try db.scalar("SELECT count(*) FROM note_category", as: Int.self) ?? 0
                Console.line("  categories: \(names.joined(separator: ", ")) (\(links) note links)")
            }
            if let sample = try db.row("SELECT * FROM note WHERE id = 2") {
                Console.line("  note 2: \(sample)")
            }
        }
        let thumbnails = (try? FileManager.default.contentsOfDirectory(atPath: app.thumbnailsURL.path)) ?? []
        Console.line("  thumbnails: \(thumbnails.filter { !$0.hasPrefix(".") }.count) files")
    }
}
