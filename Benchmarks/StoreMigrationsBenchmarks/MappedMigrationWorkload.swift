import Foundation
import StoreMigrations
import StoreMigrationsSQLite

#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif

/// The guide's heavyweight migration at scale: `persona.nombre_completo` ("apellido1 apellido2,
/// nombre") split into `apellidos` and `nombre` for `rows` people, through an `EntityMapping`
/// in a real `SQLiteStore` migration, against a hand-written C-API loop (one prepared SELECT,
/// one prepared INSERT, one transaction) on an identical copy of the database.
struct MappedMigrationWorkload {
    let rows: Int
    let timer: Timer

    static let personasV2: DeclaredSchema = [
        .table("persona", primaryKey: ["id"], columns: [
            .column("id", .integer), .column("apellidos", .text), .column("nombre", .text),
        ]),
    ]

    static let splitNames = EntityMapping(from: "persona", columns: ["id", "nombre_completo"]) { persona, destination in
        let (apellidos, nombre) = splitFullName(try persona["nombre_completo"])
        try destination.insert(into: "persona", [
            "id": persona["id"], "apellidos": DatabaseValue(apellidos), "nombre": DatabaseValue(nombre),
        ])
    }

    func run() throws -> [Measurement] {
        let directory = try temporaryDirectory("mapped")
        defer { try? FileManager.default.removeItem(at: directory) }
        let template = directory.appendingPathComponent("template.sqlite")
        try buildTemplate(at: template)
        let libraryCopy = directory.appendingPathComponent("library.sqlite")
        let baselineCopy = directory.appendingPathComponent("baseline.sqlite")

        let (library, baseline) = try timer.compare(
            measuringMemory: true, prepareLibrary: { try copyDatabase(template, to: libraryCopy) }, library: { try migrateWithLibrary(libraryCopy) },
            prepareBaseline: { try copyDatabase(template, to: baselineCopy) }, baseline: { try migrateWithCAPI(baselineCopy) })
        let summary = "SELECT count(*), count(apellidos), count(nombre), sum(length(apellidos)), sum(length(nombre)) FROM persona"
        let libraryResult = try RawSQLite(path: libraryCopy.path).integers(summary)
        let baselineResult = try RawSQLite(path: baselineCopy.path).integers(summary)
        precondition(libraryResult == baselineResult && libraryResult.first == Int64(rows), "the two migrations differ")

        return [Measurement(
            workload: "mapped migration (\(rows) rows, name split)", metric: "SQLiteStore step with EntityMapping",
            runs: timer.runs, libraryMedian: library.median, baselineMedian: baseline.median,
            target: "≤ 1.15× C-API loop", libraryPeakMiB: library.peakMiB, baselinePeakMiB: baseline.peakMiB)]
    }

    private func migrateWithLibrary(_ url: URL) throws {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let manager = try coordinator.manager("library", store: SQLiteStore(url: url))
        manager.register("2.0") { db in
            try db.migrateSchema(to: Self.personasV2, mappings: [Self.splitNames])
        }
        let report = try coordinator.run()
        guard report.succeeded, report.didRunAnything else {
            throw RawSQLiteError(message: "the mapped migration failed: \(report.steps.compactMap(\.error))")
        }
    }

    private func migrateWithCAPI(_ url: URL) throws {
        let connection = try RawSQLite(path: url.path)
        try connection.execute("""
            BEGIN IMMEDIATE;
            CREATE TABLE persona_v2(id INTEGER PRIMARY KEY, apellidos TEXT, nombre TEXT);
            """)
        let select = try connection.prepare("SELECT id, nombre_completo FROM persona")
        let insert = try connection.prepare("INSERT INTO persona_v2(id, apellidos, nombre) VALUES (?, ?, ?)")
        defer {
            sqlite3_finalize(select)
            sqlite3_finalize(insert)
        }
        while try connection.step(select) {
            let (apellidos, nombre) = splitFullName(columnText(select, 1))
            sqlite3_bind_int64(insert, 1, sqlite3_column_int64(select, 0))
            bindText(insert, 2, apellidos)
            bindText(insert, 3, nombre)
            _ = try connection.step(insert)
            sqlite3_reset(insert)
        }
        try connection.execute("""
            DROP TABLE persona;
            ALTER TABLE persona_v2 RENAME TO persona;
            COMMIT;
            """)
    }

    /// The database before the migration: people with full names, some without a comma, some
    /// empty or NULL, in WAL mode like the store's.
    private func buildTemplate(at url: URL) throws {
        let connection = try RawSQLite(path: url.path)
        try connection.execute("""
            PRAGMA journal_mode = WAL;
            CREATE TABLE persona(id INTEGER PRIMARY KEY, nombre_completo TEXT);
            BEGIN;
            """)
        let insert = try connection.prepare("INSERT INTO persona(id, nombre_completo) VALUES (?, ?)")
        defer { sqlite3_finalize(insert) }
        let surnames = ["García", "Fernández", "González", "Rodríguez", "López", "Martínez", "Sánchez", "Pérez",
                        "Gómez", "Martín", "Jiménez", "Ruiz", "Hernández", "Díaz", "Moreno", "Muñoz", "Álvarez"]
        let names = ["Ana", "Luis", "María José", "Javier", "Lucía", "Carmen", "Pablo", "Íñigo", "Sofía", "Manuel"]
        var generator = SplitMix64(seed: 7)
        let line = ProgressLine(label: "\(rows) people")
        for id in 1...rows {
            let first = surnames.randomElement(using: &generator)!, second = surnames.randomElement(using: &generator)!
            let name = names.randomElement(using: &generator)!
            let fullName: String?
            switch Int.random(in: 0..<100, using: &generator) {
            case 0..<3: fullName = nil
            case 3..<5: fullName = ""
            case 5..<10: fullName = name
            default: fullName = "\(first) \(second), \(name)"
            }
            sqlite3_bind_int64(insert, 1, Int64(id))
            bindText(insert, 2, fullName)
            _ = try connection.step(insert)
            sqlite3_reset(insert)
            line.update(id, of: rows)
        }
        try connection.execute("COMMIT")
    }

    private func copyDatabase(_ source: URL, to destination: URL) throws {
        let manager = FileManager.default
        for suffix in ["", "-wal", "-shm"] {
            try? manager.removeItem(atPath: destination.path + suffix)
        }
        try manager.copyItem(at: source, to: destination)
    }
}

/// "apellido1 apellido2, nombre" split at its first comma, as both migrations do it; a name
/// without a comma is all `nombre`, and blank parts are NULL. It works on the UTF-8 bytes, so
/// that the work both sides share is as cheap as it can be and the ratio shows the library's
/// own overhead.
func splitFullName(_ fullName: String?) -> (apellidos: String?, nombre: String?) {
    guard let bytes = fullName?.utf8 else { return (nil, nil) }
    func part(_ range: Range<String.Index>) -> String? {
        var lower = range.lowerBound
        var upper = range.upperBound
        while lower < upper, bytes[lower] == UInt8(ascii: " ") { lower = bytes.index(after: lower) }
        while upper > lower, bytes[bytes.index(before: upper)] == UInt8(ascii: " ") { upper = bytes.index(before: upper) }
        return lower == upper ? nil : String(decoding: bytes[lower..<upper], as: UTF8.self)
    }
    guard let comma = bytes.firstIndex(of: UInt8(ascii: ",")) else { return (nil, part(bytes.startIndex..<bytes.endIndex)) }
    return (part(bytes.startIndex..<comma), part(bytes.index(after: comma)..<bytes.endIndex))
}
