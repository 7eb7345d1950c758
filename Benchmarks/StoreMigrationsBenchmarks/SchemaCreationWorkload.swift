import Foundation
import StoreMigrations
import StoreMigrationsSQLite
#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif

/// A fresh install of a SQLite history of `migrations` migrations (tables, columns and indexes
/// by SQL, the last one the declared schema they lead to), created from that schema
/// (`createNewDatabasesFromSchema`) and replayed, each against the same `CREATE` statements run
/// by hand through SQLite's C API in one transaction, in WAL mode as the store's database is. The
/// creation builds the database aside and links it into place, which writes each page once where
/// the by-hand transaction in WAL mode writes it twice, so it is also measured against those
/// statements run by hand the same way: what the library adds to the creation itself. The
/// library's sides include making the coordinator and registering the history, as a launch does.
/// Both sides close their connection inside their timing: the by-hand side's closing checkpoint
/// runs when its connection is released, and the library's store is closed as the run returns,
/// where it would otherwise close on the run's thread once released, after its timing stopped.
struct SchemaCreationWorkload {
    let migrations: Int
    let timer: Timer

    /// Each table takes five migrations: created, two columns added, two indexes.
    private static let stepsPerTable = 5

    /// The SQL of history migration `index` (from 0).
    private static func historySQL(_ index: Int) -> String {
        let table = "t\(index / stepsPerTable)"
        switch index % stepsPerTable {
        case 0: return "CREATE TABLE \(table)(id INTEGER PRIMARY KEY, name TEXT NOT NULL DEFAULT '')"
        case 1: return "ALTER TABLE \(table) ADD COLUMN amount INTEGER"
        case 2: return "ALTER TABLE \(table) ADD COLUMN note TEXT"
        case 3: return "CREATE INDEX \(table)_on_name ON \(table)(name)"
        default: return "CREATE INDEX \(table)_on_amount ON \(table)(amount)"
        }
    }

    /// The schema the history leads to: every table it starts, complete.
    private var schema: DeclaredSchema {
        let tables = (migrations - 1 + Self.stepsPerTable - 1) / Self.stepsPerTable
        return DeclaredSchema((0..<tables).map { index in
            let table = "t\(index)"
            return .table(table, primaryKey: ["id"], columns: [
                .column("id", .integer), .column("name", .text, notNull: true, default: ""), .column("amount", .integer),
                .column("note", .text),
            ], indexes: [.index("\(table)_on_name", on: ["name"]), .index("\(table)_on_amount", on: ["amount"])])
        })
    }

    private func install(at url: URL, creating: Bool, history: [String], schema: DeclaredSchema) throws {
        let coordinator = MigrationCoordinator(appVersion: Version(migrations))
        let store = SQLiteStore(url: url)
        let library = try coordinator.manager("library", store: store)
        for (index, sql) in history.enumerated() { library.register(Version(index + 1), sql: sql) }
        library.register(Version(migrations), schema: schema)
        if creating { library.createNewDatabasesFromSchema(historyData: .notNeeded) }
        let report = try coordinator.run()
        store.close()
        guard report.succeeded, report.steps.count == (creating ? 1 : migrations) else {
            throw RawSQLiteError(message: "the install ran \(report.steps.count) steps: \(report.steps.compactMap(\.error))")
        }
    }

    private static func byHand(at url: URL, statements: String) throws {
        let db = try RawSQLite(path: url.path)
        try db.execute("PRAGMA journal_mode = WAL")
        try db.execute("BEGIN IMMEDIATE; " + statements + "; COMMIT")
    }

    /// The statements by hand as the library creates a new database: in a file aside, the journal
    /// in memory, switched to WAL once committed, linked into place and the folder synced.
    private static func byHandAside(at url: URL, statements: String) throws {
        let aside = url.path + ".aside"
        do {
            let db = try RawSQLite(path: aside)
            try db.execute("PRAGMA journal_mode = MEMORY")
            try db.execute("BEGIN IMMEDIATE; " + statements + "; COMMIT")
            try db.execute("PRAGMA journal_mode = WAL")
        }
        guard link(aside, url.path) == 0 else { throw RawSQLiteError(message: "link \(url.path): errno \(errno)") }
        unlink(aside)
        let folder = open(url.deletingLastPathComponent().path, O_RDONLY)
        defer { close(folder) }
        guard fsync(folder) == 0 else { throw RawSQLiteError(message: "fsync \(url.deletingLastPathComponent().path): errno \(errno)") }
    }

    func run() throws -> [Measurement] {
        let directory = try temporaryDirectory("schema-creation")
        defer { try? FileManager.default.removeItem(at: directory) }
        let schema = self.schema
        let statements = schema.description
        // Made before the timing, as the by-hand side's statements are: an app's migrations are
        // literals in its source.
        let history = (0..<(migrations - 1)).map(Self.historySQL)
        let created = directory.appendingPathComponent("created.sqlite")
        let replayed = directory.appendingPathComponent("replayed.sqlite")
        let hand = directory.appendingPathComponent("by-hand.sqlite")
        func remove(_ url: URL) {
            for suffix in ["", "-wal", "-shm", "-journal", ".lock", ".aside"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
        }

        let (creation, byHand) = try timer.compare(
            prepareLibrary: { remove(created) }, library: { try install(at: created, creating: true, history: history, schema: schema) },
            prepareBaseline: { remove(hand) }, baseline: { try Self.byHand(at: hand, statements: statements) })
        try check(created, equals: hand)
        let (creationAgain, byHandAside) = try timer.compare(
            prepareLibrary: { remove(created) }, library: { try install(at: created, creating: true, history: history, schema: schema) },
            prepareBaseline: { remove(hand) }, baseline: { try Self.byHandAside(at: hand, statements: statements) })
        try check(created, equals: hand)
        let (replay, byHandAgain) = try timer.compare(
            prepareLibrary: { remove(replayed) }, library: { try install(at: replayed, creating: false, history: history, schema: schema) },
            prepareBaseline: { remove(hand) }, baseline: { try Self.byHand(at: hand, statements: statements) })
        try check(replayed, equals: hand)

        let workload = "schema creation (SQLite, \(migrations) migrations, \(schema.tables.count) tables)"
        return [
            Measurement(
                workload: workload, metric: "fresh install created from the declared schema vs the CREATE statements by hand",
                runs: timer.runs, libraryMedian: creation.median, baselineMedian: byHand.median, target: "≤ 1.1× by hand"),
            Measurement(
                workload: workload,
                metric: "fresh install created from the declared schema vs the CREATE statements by hand, built aside as it is",
                runs: timer.runs, libraryMedian: creationAgain.median, baselineMedian: byHandAside.median, target: "reported"),
            Measurement(
                workload: workload, metric: "fresh install replaying every migration vs the CREATE statements by hand",
                runs: timer.runs, libraryMedian: replay.median, baselineMedian: byHandAgain.median, target: "reported"),
        ]
    }

    /// Throws unless the install at `url` has the tables and indexes made by hand.
    private func check(_ url: URL, equals hand: URL) throws {
        let query = "SELECT group_concat(type || ' ' || name, ', ') FROM "
            + "(SELECT type, name FROM sqlite_master WHERE tbl_name NOT LIKE 'store_migrations%' ORDER BY type, name)"
        let installed = try RawSQLite(path: url.path).scalarText(query)
        guard installed == (try RawSQLite(path: hand.path).scalarText(query)) else {
            throw RawSQLiteError(message: "\(url.lastPathComponent) differs from the schema made by hand")
        }
    }
}
