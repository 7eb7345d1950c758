import Foundation
import StoreMigrations

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

        // The two take turns, run by run, so that other work on the machine (two cores, shared)
        // slows both alike; the first turn warms up. `timer` sets the number of turns.
        var library = Samples()
        var baseline = Samples()
        for _ in 0...timer.runs {
            try copyDatabase(template, to: libraryCopy)
            try library.measure { try migrateWithLibrary(libraryCopy) }
            try copyDatabase(template, to: baselineCopy)
            try baseline.measure { try migrateWithCAPI(baselineCopy) }
        }
        let summary = "SELECT count(*), count(apellidos), count(nombre), sum(length(apellidos)), sum(length(nombre)) FROM persona"
        let (libraryResult, baselineResult) = (try Connection(libraryCopy).values(summary), try Connection(baselineCopy).values(summary))
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
            throw WorkloadError(message: "the mapped migration failed: \(report.steps.compactMap(\.error))")
        }
    }

    private func migrateWithCAPI(_ url: URL) throws {
        let connection = try Connection(url)
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
        while sqlite3_step(select) == SQLITE_ROW {
            let fullName = sqlite3_column_text(select, 1).map { text in
                String(decoding: UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(select, 1))), as: UTF8.self)
            }
            let (apellidos, nombre) = splitFullName(fullName)
            sqlite3_bind_int64(insert, 1, sqlite3_column_int64(select, 0))
            Self.bind(apellidos, to: insert, at: 2)
            Self.bind(nombre, to: insert, at: 3)
            guard sqlite3_step(insert) == SQLITE_DONE else { throw connection.error("INSERT") }
            sqlite3_reset(insert)
        }
        try connection.execute("""
            DROP TABLE persona;
            ALTER TABLE persona_v2 RENAME TO persona;
            COMMIT;
            """)
    }

    private static func bind(_ text: String?, to statement: OpaquePointer?, at index: Int32) {
        guard var text else {
            sqlite3_bind_null(statement, index)
            return
        }
        text.withUTF8 { bytes in
            _ = bytes.withMemoryRebound(to: CChar.self) {
                sqlite3_bind_text(statement, index, $0.baseAddress, Int32($0.count), transient)
            }
        }
    }

    /// The database before the migration: people with full names, some without a comma, some
    /// empty or NULL, in WAL mode like the store's.
    private func buildTemplate(at url: URL) throws {
        let connection = try Connection(url)
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
            Self.bind(fullName, to: insert, at: 2)
            guard sqlite3_step(insert) == SQLITE_DONE else { throw connection.error("INSERT") }
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

/// The durations and peak memory of one side's runs, the first of which warms up.
private struct Samples {
    private var seconds: [Double] = []
    private(set) var peakMiB = 0.0

    mutating func measure(_ body: () throws -> Void) throws {
        let start = ContinuousClock.now
        let peak = try PeakMemory.measure(body)
        let elapsed = ContinuousClock.now - start
        seconds.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        peakMiB = max(peakMiB, peak ?? 0)
    }

    var median: Double {
        let timed = seconds.dropFirst().sorted()
        return timed[timed.count / 2]
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

/// Tells SQLite to copy bound text, since Swift frees its buffers after the call.
private let transient = unsafeBitCast(-1 as Int, to: sqlite3_destructor_type.self)

/// A bare SQLite connection for the baseline, the template and the final comparison.
private final class Connection {
    let handle: OpaquePointer

    init(_ url: URL) throws {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(url.path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK,
            let handle
        else {
            sqlite3_close_v2(handle)
            throw WorkloadError(message: "cannot open \(url.path)")
        }
        self.handle = handle
    }

    deinit { sqlite3_close_v2(handle) }

    func execute(_ sql: String) throws {
        guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else { throw error(sql) }
    }

    func prepare(_ sql: String) throws -> OpaquePointer? {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK else { throw error(sql) }
        return statement
    }

    /// The integers of the first row of `sql`.
    func values(_ sql: String) throws -> [Int64] {
        let statement = try prepare(sql)
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW else { throw error(sql) }
        return (0..<sqlite3_column_count(statement)).map { sqlite3_column_int64(statement, $0) }
    }

    func error(_ sql: String) -> WorkloadError {
        WorkloadError(message: "\(String(cString: sqlite3_errmsg(handle))) while running \(sql)")
    }
}

private struct WorkloadError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
