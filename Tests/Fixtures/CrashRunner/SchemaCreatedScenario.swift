import Foundation
import StoreMigrations
import StoreMigrationsSQLite

/// A fresh install created from the declared schema, killed and relaunched by
/// `SchemaCreationKillTests`: a database whose history 1.0 (`note`), 1.1 (a welcome note) and 2.0
/// (the declared schema: `note` with `guid`, and `tag`) is replaced by a creation from that
/// schema, whose seed writes the welcome note and counts its runs in `calls`. With `hold`, the
/// seed touches that file once its writes are made and sleeps inside the creation's
/// transaction until it is killed.
struct SchemaCreatedScenario {
    let directory: URL
    let hold: URL?

    var databaseURL: URL { directory.appendingPathComponent("created.sqlite") }

    static let schema: DeclaredSchema = [
        .table("note", primaryKey: ["id"], columns: [
            .column("id", .integer), .column("title", .text), .column("guid", .text),
        ], indexes: [.index("note_on_guid", on: ["guid"])]),
        .table("tag", columns: [.column("name", .text, notNull: true)]),
        .table("calls", columns: [.column("n", .integer)]),
    ]

    func coordinator() throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let library = try coordinator.manager("library", store: SQLiteStore(url: databaseURL))
        library.register("1.0", options: .named("notes"), sql: "CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT)")
        library.register("1.1", options: .named("welcome"), sql: "INSERT INTO note(title) VALUES ('Welcome')")
        library.register("2.0", options: .named("guids and tags"), schema: Self.schema)
        let hold = self.hold
        library.createNewDatabasesFromSchema(historyData: .seed { db in
            try db.execute("INSERT INTO note(title) VALUES ('Welcome')")
            try db.execute("INSERT INTO calls(n) VALUES (1)")
            if let hold {
                try Data().write(to: hold)
                // Killed long before this; the bound only keeps a forgotten process from holding
                // the database forever.
                Thread.sleep(forTimeInterval: 600)
                throw ScenarioError(message: "created: nobody killed this process")
            }
        })
        return coordinator
    }
}
