import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// The history's `applied_at` is made in Swift, and must be the text SQLite's `strftime` wrote in
/// earlier releases, byte for byte.
@Suite struct SQLiteTimestampTests {
    static let format = "strftime('%Y-%m-%dT%H:%M:%fZ', ?, 'unixepoch')"

    /// Seconds on each side of what rounds: the half millisecond, days, leap days, centuries,
    /// SQLite's first and last dates, and the year 0; then spread pseudo-randomly over the years.
    static var awkwardSeconds: [Double] {
        var seconds: [Double] = [
            0, 0.0005, 0.0004999, -0.0005, -0.0005001, -0.001, 0.999, 0.9995, 59.999, 59.9995, 86399.9995,
            1_000_000_000.4995, 1_000_000_000.5, 1_798_365_845.123, 951_782_400, 951_868_799.999, 4_102_444_800,
            -2_208_988_800, 253_402_300_799.999, 253_402_300_799.9994, 253_402_300_799.9995, 253_402_300_800,
            -62_167_219_200, -62_167_219_200.001, -62_167_219_199.9995, -210_866_760_000, -210_866_760_000.001,
            .nan, .infinity, -.infinity, 1e300, -1e300,
        ]
        var state: UInt64 = 0x2026_1127
        for _ in 0..<5000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let fraction = Double(state >> 11) / Double(1 << 53)
            seconds.append(-62_167_219_200 + fraction * (253_402_300_800 + 62_167_219_200))
        }
        return seconds
    }

    @Test func theTimestampIsSQLitesStrftimeForEveryDateFromTheYear0() throws {
        let folder = try TemporaryFolder()
        let db = try Database(path: folder.file("dates.sqlite").path, busyTimeout: 0)
        let strftime = try db.prepare("SELECT " + Self.format)
        for seconds in Self.awkwardSeconds {
            let sqlite = try strftime.rows(arguments: [.real(seconds)]).first.flatMap { try $0[0] as String? }
            let ours = SQLiteTimestamp(secondsSince1970: seconds)?.text
            if seconds < -62_167_219_200.0005 {
                #expect(ours == nil, "\(seconds): before the year 0")
            } else {
                #expect(ours == sqlite, "\(seconds)")
            }
        }
    }

    @Test func theHistoryStoresWhatStrftimeStoredAndOldAndNewRowsReadAlike() throws {
        let folder = try TemporaryFolder()
        let url = folder.file("library.sqlite")
        let store = SQLiteStore(url: url)
        let when = Date(timeIntervalSince1970: 1_798_365_845.1236)
        let record = MigrationRecord(applied: [
            AppliedMigration(version: "1.0", appliedAt: when, duration: 0.5),
            AppliedMigration(version: "1.1", appliedAt: when, duration: 0.25),
            AppliedMigration(version: "1.2", appliedAt: when.addingTimeInterval(61.0004), duration: 0),
        ])
        try store.write { db in
            for statement in SQLiteStore.recordTables.createStatements { try db.execute(statement) }
            try SQLiteStore.recordTables.write(["library": record], over: [:], through: RecordStatementCache(db))
            // A row as earlier releases wrote it: the same time, formatted by SQLite.
            try db.execute(
                "INSERT INTO store_migrations_history(manager, version, applied_at, duration_seconds) "
                    + "VALUES ('old', '1.0', \(Self.format), 0.5)",
                arguments: [.real(when.timeIntervalSince1970)])
        }
        let stored = try store.read { db in
            try db.rows("SELECT applied_at FROM store_migrations_history ORDER BY id")
        }
        let texts = try stored.map { try $0["applied_at"] as String }
        #expect(texts == [
            "2026-12-27T10:04:05.124Z", "2026-12-27T10:04:05.124Z", "2026-12-27T10:05:06.124Z",
            "2026-12-27T10:04:05.124Z",
        ])

        let records = try store.readRecords()
        let new = try #require(records["library"]?.applied.first?.appliedAt)
        let old = try #require(records["old"]?.applied.first?.appliedAt)
        #expect(new == old)
        #expect(abs(new.timeIntervalSince1970 - 1_798_365_845.124) < 0.0005)
    }
}
