import Foundation
#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif

/// A database built once per workload and copied before every run, so that the library and the
/// baseline each start from identical bytes.
struct SQLiteFixture {
    let template: URL
    let directory: URL

    /// Builds a table of `rows` rows: `schema` creates it, `insert` (with `?` placeholders) fills
    /// it from `values(row)`.
    init(name: String, rows: Int, schema: String, insert: String, values: (Int) -> [String?]) throws {
        directory = try temporaryDirectory(name)
        template = directory.appendingPathComponent("template.sqlite")
        let db = try RawSQLite(path: template.path)
        try db.execute("PRAGMA journal_mode = DELETE; \(schema); BEGIN")
        let statement = try db.prepare(insert)
        defer { sqlite3_finalize(statement) }
        let progress = ProgressLine(label: "\(name) (\(rows) rows)")
        for row in 1...rows {
            for (index, value) in values(row).enumerated() { bindText(statement, Int32(index + 1), value) }
            _ = try db.step(statement)
            sqlite3_reset(statement)
            progress.update(row, of: rows)
        }
        try db.execute("COMMIT")
    }

    /// A fresh copy of the template, named `name`.
    func copy(_ name: String) throws -> URL {
        let url = directory.appendingPathComponent(name)
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
        try FileManager.default.copyItem(at: template, to: url)
        return url
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}

/// The value the row-transform workloads compute in Swift for each row.
func computedGUID(_ id: Int64) -> String {
    String(UInt64(bitPattern: id) &* 0x9E37_79B9_7F4A_7C15, radix: 16)
}
