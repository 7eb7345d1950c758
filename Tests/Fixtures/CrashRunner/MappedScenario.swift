import Foundation
import StoreMigrations
import StoreMigrationsSQLite

/// A resumable schema migration with an entity mapping, killed and relaunched by
/// `ResumableKillTests`: a database whose migration `1.0` creates `item(id, value, grp)` with
/// `rows` rows in seven groups named by text, and whose migration `2.0` maps every item into a
/// new `item(id, value, group_id)` (`value * 2 + 1`) and its group into a `grp` table, one row per
/// name through `insertOnce`; a preferences file whose migration `2.0` depends on it.
struct MappedScenario {
    let directory: URL
    let rows: Int
    let batchRows: Int

    var databaseURL: URL { directory.appendingPathComponent("mapped.sqlite") }
    var preferencesURL: URL { directory.appendingPathComponent("after.json") }

    static let schema: DeclaredSchema = [
        .table("grp", primaryKey: ["id"], columns: [.column("id", .integer), .column("name", .text, notNull: true)], unique: [["name"]]),
        .table("item", primaryKey: ["id"], columns: [
            .column("id", .integer), .column("value", .integer, notNull: true), .column("group_id", .integer, notNull: true),
        ], foreignKeys: [.foreignKey(["group_id"], references: "grp", columns: ["id"])]),
    ]

    func coordinator() throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let items = try coordinator.manager("items", store: SQLiteStore(url: databaseURL))
        let rows = self.rows
        items.register("1.0") { db in
            try db.execute("CREATE TABLE item(id INTEGER PRIMARY KEY, value INTEGER NOT NULL, grp TEXT NOT NULL)")
            let insert = try db.prepare("INSERT INTO item(id, value, grp) VALUES (?, ?, ?)")
            for id in 1...rows {
                try insert.execute(arguments: [.integer(Int64(id)), .integer(Int64(id)), .text("group \(id % 7)")])
            }
        }
        items.registerResumable(
            "2.0", migratingSchemaTo: Self.schema,
            mappings: [
                EntityMapping(from: "item") { item, destination in
                    let value: Int64 = try item["value"], name: String = try item["grp"]
                    let group = try destination.insertOnce(into: "grp", key: .text(name), ["name": .text(name)])
                    try destination.insert(into: "item", [
                        "id": item["id"], "value": .integer(value * 2 + 1), "group_id": .integer(group),
                    ])
                },
            ],
            batchSize: .fixed(batchRows))
        try coordinator.manager("after", store: PreferencesStore(url: preferencesURL))
            .register("2.0", dependsOn: [items.migration("2.0")]) { preferences in
                try preferences.set(true, for: "ranAfterItems")
            }
        return coordinator
    }
}
