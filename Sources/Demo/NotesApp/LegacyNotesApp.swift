import Foundation
import StoreMigrations
import StoreMigrationsSQLite

/// The stores of version 1.0 of a notes app, as its users have them on disk: preferences with
/// old keys, a notes database whose events and tags have no identifiers and whose notes keep a
/// `category` text and an author's `full_name`, and a cache of thumbnails.
package struct LegacyNotesApp {
    package let directory: URL

    package init(directory: URL) {
        self.directory = directory
    }

    package var preferencesURL: URL { directory.appendingPathComponent("Preferences.json") }
    package var databaseURL: URL { directory.appendingPathComponent("Notes.sqlite") }
    package var thumbnailsURL: URL { directory.appendingPathComponent("Thumbnails", isDirectory: true) }

    package static let categories: [String?] = [
        "Work", "work ", "Personal", "Ideas", "Travel", "Recipes", "Books", "Health", "", nil, "Finance", "Ideas",
    ]
    package static let names = [
        "García López, Ana", "Pérez Ruiz, Luis", "Martín Gómez, Carmen", "Sánchez Díaz, Jorge",
        "Fernández Moreno, Lucía", "Cher", "Romero Navarro, Pablo", "Torres Gil, Elena",
    ]

    /// Written last by ``create(notes:progress:)``: without it, a run was killed while writing
    /// the 1.0 stores, before anything was migrated, and they are written again.
    package var completeMarkerURL: URL { directory.appendingPathComponent(".legacy-1.0-complete") }

    /// What `directory` holds.
    package enum State: Equatable {
        /// Nothing (or it does not exist): the 1.0 stores are to be written.
        case empty
        /// Part of the 1.0 stores, from a run killed while writing them.
        case partlyCreated
        /// The 1.0 stores, migrated or not: the launch of 2.0 resumes.
        case created
        /// Files that are not the demo's.
        case foreign([String])
    }

    /// The prefixes of every name the demo and its stores write in `directory` (data, locks,
    /// journals, temporary files of an atomic replace, the database the SQLite store was
    /// creating when killed: `.Notes.sqlite.….creating`, the plan's graph, and the temporary file
    /// Foundation's atomic `Data.write` leaves when killed: `.dat.nosync…`).
    package static let ownNamePrefixes = [
        "Preferences.json", ".Preferences.json", "Notes.sqlite", ".Notes.sqlite", "Thumbnails", "plan.",
        ".legacy-1.0-complete", ".dat.nosync",
    ]

    package func state() -> State {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        if names.isEmpty { return .empty }
        let unknown = names.filter { name in !Self.ownNamePrefixes.contains { name.hasPrefix($0) } }.sorted()
        if !unknown.isEmpty { return .foreign(unknown) }
        return FileManager.default.fileExists(atPath: completeMarkerURL.path) ? .created : .partlyCreated
    }

    /// Removes what a run killed while writing the 1.0 stores left (only the demo's own names).
    package func removePartialStores() throws {
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path)
        where Self.ownNamePrefixes.contains(where: { name.hasPrefix($0) }) {
            try FileManager.default.removeItem(at: directory.appendingPathComponent(name))
        }
    }

    /// Writes the 1.0 stores with `notes` notes, reporting progress through `progress`.
    package func create(notes: Int, progress: (String) -> Void) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try writePreferences()
        try writeDatabase(notes: notes, progress: progress)
        try writeThumbnails(count: max(10, notes / 100))
        try Data().write(to: completeMarkerURL)
    }

    private func writePreferences() throws {
        let legacy = """
            {
              "showHelp": true,
              "sortOrder": "date",
              "fontSize": 14,
              "lastNoteID": 42,
              "syncEnabled": false,
              "legacyFlag": 1
            }
            """
        try Data(legacy.utf8).write(to: preferencesURL, options: .atomic)
    }

    /// The tables the 1.0 app created, which 2.0 registers as its library's first migration.
    package static let databaseSchema = """
        CREATE TABLE note(
            id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT, date TEXT NOT NULL,
            category TEXT, full_name TEXT);
        CREATE TABLE event(id INTEGER PRIMARY KEY, note_id INTEGER NOT NULL REFERENCES note(id), kind TEXT, at TEXT);
        CREATE TABLE tag(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
        CREATE TABLE note_tag(note_id INTEGER NOT NULL REFERENCES note(id), tag_id INTEGER NOT NULL REFERENCES tag(id));
        CREATE INDEX note_date ON note(date);
        """

    private func writeDatabase(notes: Int, progress: (String) -> Void) throws {
        // The 1.0 app wrote its database without this library: plain SQL, no levels.
        try SQLiteStore(url: databaseURL).write { db in
            try db.execute(Self.databaseSchema)
            let insertTag = try db.prepare("INSERT INTO tag(name) VALUES (?)")
            for index in 1...50 { try insertTag.execute(arguments: [.text("tag\(index)")]) }
            let insertNote = try db.prepare(
                "INSERT INTO note(id, title, body, date, category, full_name) VALUES (?, ?, ?, ?, ?, ?)")
            let insertEvent = try db.prepare("INSERT INTO event(note_id, kind, at) VALUES (?, ?, ?)")
            let insertNoteTag = try db.prepare("INSERT INTO note_tag(note_id, tag_id) VALUES (?, ?)")
            for id in 1...max(1, notes) {
                let date = String(format: "2024-%02d-%02dT10:%02d:00Z", id % 12 + 1, id % 28 + 1, id % 60)
                let category = Self.categories[id % Self.categories.count]
                try insertNote.execute(arguments: [
                    .integer(Int64(id)), .text("Note \(id)"), .text("Body of note \(id)"), .text(date),
                    category.map { .text($0) } ?? .null, .text(Self.names[id % Self.names.count]),
                ])
                for kind in ["created", "edited"] {
                    try insertEvent.execute(arguments: [.integer(Int64(id)), .text(kind), .text(date)])
                }
                try insertNoteTag.execute(arguments: [.integer(Int64(id)), .integer(Int64(id % 50 + 1))])
                if id % 10_000 == 0 { progress("database: \(id) of \(notes) notes") }
            }
        }
    }

    private func writeThumbnails(count: Int) throws {
        try FileManager.default.createDirectory(at: thumbnailsURL, withIntermediateDirectories: true)
        for id in 1...count {
            try Data(repeating: UInt8(id % 256), count: 256).write(to: thumbnailsURL.appendingPathComponent("note-\(id).png"))
        }
    }
}
