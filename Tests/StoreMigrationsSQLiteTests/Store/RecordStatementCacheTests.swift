import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// The record tables' statements bind text where it lies, without SQLite copying it: what they
/// store must be what the driver's copying bind stores.
@Suite struct RecordStatementCacheTests {
    /// Texts on each side of what a string keeps inline (15 bytes), empty, with quotes, a NUL,
    /// non-ASCII and long, each beside a real and a NULL.
    static let awkwardTexts = [
        "", "a", "v1", "fifteen bytes!!", "sixteen bytes!!!", "it's \"quoted\"", "nul\u{0}inside", "café ☕ 日本語 🦊",
        "e\u{301}", String(repeating: "x", count: 10_000), "v1:" + String(repeating: "0123456789abcdef", count: 4),
    ]

    @Test func rowsWrittenWithoutACopyReadAsThoseTheCopyingBindWrites() throws {
        let folder = try TemporaryFolder()
        let db = try Database(path: folder.file("records.sqlite").path, busyTimeout: 0)
        try db.execute("CREATE TABLE borrowed(n INTEGER PRIMARY KEY, a, b, c, d)")
        try db.execute("CREATE TABLE copied(n INTEGER PRIMARY KEY, a, b, c, d)")
        let cache = RecordStatementCache(db)
        let copying = try db.prepare("INSERT INTO copied(a, b, c, d) VALUES (?, ?, ?, ?)")
        for (index, text) in Self.awkwardTexts.enumerated() {
            let other = Self.awkwardTexts[(index + 3) % Self.awkwardTexts.count]
            try cache.executeRecordStatement(
                "INSERT INTO borrowed(a, b, c, d) VALUES (?, ?, ?, ?)", [.text(text), .real(Double(index) / 3), .null, .text(other)])
            try copying.execute(arguments: [.text(text), .real(Double(index) / 3), .null, .text(other)])
        }
        let query = "SELECT n, a, typeof(a), length(CAST(a AS BLOB)), b, c, typeof(c), d FROM %@ ORDER BY n"
        let borrowed = try db.rows(query.replacingOccurrences(of: "%@", with: "borrowed")).map(\.values)
        let copied = try db.rows(query.replacingOccurrences(of: "%@", with: "copied")).map(\.values)
        #expect(borrowed.count == Self.awkwardTexts.count)
        #expect(borrowed == copied)
        #expect(borrowed.map { $0[1] } == Self.awkwardTexts.map { .text($0) })
    }

    @Test func aWrongNumberOfArgumentsIsRefusedBeforeAnythingRuns() throws {
        let folder = try TemporaryFolder()
        let db = try Database(path: folder.file("records.sqlite").path, busyTimeout: 0)
        try db.execute("CREATE TABLE t(a, b)")
        let cache = RecordStatementCache(db)
        #expect(throws: SQLiteError.self) { try cache.executeRecordStatement("INSERT INTO t(a, b) VALUES (?, ?)", [.text("only one")]) }
        #expect(try db.scalar("SELECT count(*) FROM t", as: Int.self) == 0)
    }
}
