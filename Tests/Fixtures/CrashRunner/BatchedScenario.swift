import Foundation
import StoreMigrations
import StoreMigrationsSQLite

/// A resumable row transform killed and relaunched by `ResumableKillTests`: a database whose
/// migration `1.0` creates `item(id, value, calls)` with `rows` rows, and whose migration `2.0`
/// rewrites every row, batch by batch, with a transform that is not idempotent (`value * 2 + 1`)
/// and counts its calls per row; a preferences file whose migration `2.0` depends on it and
/// records that it ran after it.
struct BatchedScenario {
    let directory: URL
    let rows: Int
    let batchRows: Int

    var databaseURL: URL { directory.appendingPathComponent("batched.sqlite") }
    var preferencesURL: URL { directory.appendingPathComponent("after.json") }

    func coordinator() throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let items = try coordinator.manager("items", store: SQLiteStore(url: databaseURL))
        let rows = self.rows
        items.register("1.0") { db in
            try db.execute("CREATE TABLE item(id INTEGER PRIMARY KEY, value INTEGER NOT NULL, calls INTEGER NOT NULL)")
            let insert = try db.prepare("INSERT INTO item(id, value, calls) VALUES (?, ?, 0)")
            for id in 1...rows { try insert.execute(arguments: [.integer(Int64(id)), .integer(Int64(id))]) }
        }
        items.registerResumable(
            "2.0", transformingRowsOf: "item", columns: ["value", "calls"], batchSize: .fixed(batchRows)
        ) { row in
            let value: Int64 = try row["value"], calls: Int64 = try row["calls"]
            return ["value": .integer(value * 2 + 1), "calls": .integer(calls + 1)]
        }
        try coordinator.manager("after", store: PreferencesStore(url: preferencesURL))
            .register("2.0", dependsOn: [items.migration("2.0")]) { preferences in
                try preferences.set(true, for: "ranAfterItems")
            }
        return coordinator
    }
}
