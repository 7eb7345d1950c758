import Foundation
import StoreMigrations
import StoreMigrationsSQLite

/// A squashed fresh install killed and relaunched by `SquashKillTests`: a database whose
/// migrations 1.0 (`note`), 1.1 (`note.guid`) and 1.2 (`tag`) are squashed into one body that
/// also counts its runs in `calls`, then 2.0 adds a note; a preferences file whose 2.0 depends on
/// library@1.1, inside the range. With `hold`, the squash touches that file once its writes are
/// made and sleeps inside its transaction until it is killed.
struct SquashedScenario {
    let directory: URL
    let hold: URL?

    var databaseURL: URL { directory.appendingPathComponent("squashed.sqlite") }
    var preferencesURL: URL { directory.appendingPathComponent("squashed.json") }

    func coordinator() throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let library = try coordinator.manager("library", store: SQLiteStore(url: databaseURL))
        library.register("1.0", options: .named("notes")) { db in try db.execute("CREATE TABLE note(id INTEGER PRIMARY KEY)") }
        library.register("1.1", options: .named("guids")) { db in try db.execute("ALTER TABLE note ADD COLUMN guid TEXT") }
        library.register("1.2", options: .named("tags")) { db in try db.execute("CREATE TABLE tag(name TEXT)") }
        let hold = self.hold
        library.squash(from: "1.0", through: "1.2", options: .named("schema 1.2")) { db in
            try db.execute("CREATE TABLE note(id INTEGER PRIMARY KEY, guid TEXT)")
            try db.execute("CREATE TABLE tag(name TEXT)")
            try db.execute("CREATE TABLE calls(n INTEGER)")
            try db.execute("INSERT INTO calls(n) VALUES (1)")
            if let hold {
                try Data().write(to: hold)
                // Killed long before this; the bound only keeps a forgotten process from holding
                // the database forever.
                Thread.sleep(forTimeInterval: 600)
                throw ScenarioError(message: "squashed: nobody killed this process")
            }
        }
        library.register("2.0") { db in try db.execute("INSERT INTO note(guid) VALUES ('after the squash')") }
        try coordinator.manager("prefs", store: PreferencesStore(url: preferencesURL))
            .register("2.0", dependsOn: [library.migration("1.1")]) { preferences in
                try preferences.set(true, for: "ranAfterLibrary")
            }
        return coordinator
    }
}
