import Foundation
import StoreMigrations
import StoreMigrationsSQLite

/// The guide's category extraction in SQL: a category table and a join table filled from the
/// notes' `category` text, then the old column dropped. Baseline: the same SQL run directly.
struct HeavySQLWorkload {
    let rows: Int
    let timer: Timer

    static let categories: [String?] = ["Work", "work ", "Personal", "Ideas", "Travel", "Recipes", "", nil, "Books"]

    static let extraction = """
        CREATE TABLE category(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE COLLATE NOCASE);
        CREATE TABLE note_category(
            note_id INTEGER NOT NULL REFERENCES note(id), category_id INTEGER NOT NULL REFERENCES category(id),
            PRIMARY KEY(note_id, category_id));
        INSERT OR IGNORE INTO category(name)
            SELECT DISTINCT trim(category) FROM note WHERE trim(category) <> '' ORDER BY trim(category);
        INSERT INTO note_category(note_id, category_id)
            SELECT note.id, category.id FROM note JOIN category ON category.name = trim(note.category);
        """

    func run() throws -> [Measurement] {
        let fixture = try SQLiteFixture(
            name: "heavy-sql", rows: rows,
            schema: "CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT NOT NULL, category TEXT)",
            insert: "INSERT INTO note(title, category) VALUES (?, ?)",
            values: { ["note \($0)", Self.categories[$0 % Self.categories.count]] })
        defer { fixture.remove() }
        var work = fixture.template

        func library() throws {
            let coordinator = MigrationCoordinator(appVersion: "2.0")
            try coordinator.manager("library", store: SQLiteStore(url: work)).register("2.0") { db in
                try db.execute(Self.extraction)
                try db.dropColumn("category", from: "note")
            }
            try coordinator.run()
        }
        func baseline() throws {
            let db = try RawSQLite(path: work.path)
            try db.execute("PRAGMA journal_mode = WAL; BEGIN IMMEDIATE; \(Self.extraction) ALTER TABLE note DROP COLUMN category; COMMIT")
        }

        let (libraryRuns, baselineRuns) = try timer.compare(
            prepareLibrary: { work = try fixture.copy("library.sqlite") }, library: library,
            prepareBaseline: { work = try fixture.copy("baseline.sqlite") }, baseline: baseline)
        return [Measurement(
            workload: "heavy SQL (\(rows) notes)", metric: "migration vs direct SQL", runs: timer.runs,
            libraryMedian: libraryRuns.median, baselineMedian: baselineRuns.median, target: "≤ 1.05×")]
    }
}
