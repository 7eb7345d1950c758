import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif

/// What a SQLite store's records read gives, now that one statement reads both tables and the
/// times the store writes are converted without `julianday()`: the same times to the bit, times
/// written some other way as `julianday()` reads them, stores without a history table or a
/// `baseline` column, several managers' histories interleaved, rows scanned out of id order.
@Suite struct SQLitePlanningReadTests {
    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder()
    }

    var url: URL { folder.file("library.sqlite") }

    static let storeTables = """
        CREATE TABLE store_migrations_levels(
            manager TEXT PRIMARY KEY NOT NULL, level TEXT, app_version TEXT, baseline TEXT);
        CREATE TABLE store_migrations_history(
            id INTEGER PRIMARY KEY, manager TEXT NOT NULL, version TEXT NOT NULL,
            applied_at TEXT NOT NULL, duration_seconds REAL NOT NULL);
        """

    /// `(julianday(value) - 2440587.5) * 86400.0` as SQLite computes it, `nil` for `NULL`.
    static func sqliteUnixTimes(of values: [String]) throws -> [Double?] {
        var handle: OpaquePointer?
        defer { sqlite3_close_v2(handle) }
        guard sqlite3_open(":memory:", &handle) == SQLITE_OK else { throw TestFailure(message: "cannot open") }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, "SELECT (julianday(?) - 2440587.5) * 86400.0", -1, &statement, nil) == SQLITE_OK else {
            throw TestFailure(message: String(cString: sqlite3_errmsg(handle)))
        }
        defer { sqlite3_finalize(statement) }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        return values.map { value in
            sqlite3_bind_text(statement, 1, value, -1, transient)
            defer { sqlite3_reset(statement) }
            guard sqlite3_step(statement) == SQLITE_ROW, sqlite3_column_type(statement, 0) != SQLITE_NULL else { return nil }
            return sqlite3_column_double(statement, 0)
        }
    }

    /// `seconds` written as the store writes `applied_at`.
    static func storeTimestamps(of seconds: [Double]) throws -> [String] {
        var handle: OpaquePointer?
        defer { sqlite3_close_v2(handle) }
        guard sqlite3_open(":memory:", &handle) == SQLITE_OK else { throw TestFailure(message: "cannot open") }
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, "SELECT strftime('%Y-%m-%dT%H:%M:%fZ', ?, 'unixepoch')", -1, &statement, nil) == SQLITE_OK else {
            throw TestFailure(message: String(cString: sqlite3_errmsg(handle)))
        }
        defer { sqlite3_finalize(statement) }
        return try seconds.map { seconds in
            sqlite3_bind_double(statement, 1, seconds)
            defer { sqlite3_reset(statement) }
            guard sqlite3_step(statement) == SQLITE_ROW, let text = sqlite3_column_text(statement, 0) else {
                throw TestFailure(message: "no timestamp for \(seconds)")
            }
            return String(cString: text)
        }
    }

    static func storeUnixTime(of text: String) -> Double? {
        var text = text
        return text.withUTF8 { AppliedAtReader.unixTime(ofStoreTimestamp: $0) }
    }

    @Test func timesInTheStoresFormatConvertToWhatJulianDayGives() throws {
        var texts: [String] = []
        // Leap and common years, the Gregorian switch, centuries, the epoch, both ends.
        for year in [0, 1, 4, 99, 100, 400, 1581, 1582, 1600, 1900, 1969, 1970, 2000, 2024, 2025, 2038, 2100, 9999] {
            for month in 1...12 {
                for day in [1, 15, 28, 29, 30, 31] {
                    for time in ["00:00:00.000", "12:34:56.789", "23:59:59.999", "06:07:08.009"] {
                        texts.append(String(format: "%04d-%02d-%02dT%@Z", year, month, day, time))
                    }
                }
            }
        }
        // And times as the store writes them, from 1970 to 2100, milliseconds of every kind.
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        var seconds: [Double] = []
        for _ in 0..<20_000 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            seconds.append(Double((seed >> 20) % 4_102_444_800_000) / 1_000 + Double(seed % 7) / 10_000)
        }
        texts += try Self.storeTimestamps(of: seconds)
        let expected = try Self.sqliteUnixTimes(of: texts)
        var converted = 0
        for (text, time) in zip(texts, expected) {
            guard let ours = Self.storeUnixTime(of: text) else {
                // Only days a month does not have are left to SQLite (which moves them on).
                #expect(text.count == 24 && time != nil, "\(text) not converted")
                continue
            }
            converted += 1
            #expect(ours.bitPattern == time?.bitPattern, "\(text): \(ours) vs SQLite's \(String(describing: time))")
        }
        #expect(converted > texts.count * 9 / 10)
    }

    @Test(arguments: [
        "2025-02-30T00:00:00.000Z", "2025-01-02 03:04:05", "2025-01-02T03:04:05Z", "2025-01-02T24:00:00.000Z",
        "2025-01-02T03:04:05.000z", "2025-01-02T03:04:05.000+01:00", "2025-13-02T03:04:05.000Z", "20250102T030405.000Z",
        "2025-01-02T03:04:60.000Z", "2025-01-0xT03:04:05.000Z", "",
    ])
    func anyOtherTextIsLeftToJulianDay(text: String) {
        #expect(Self.storeUnixTime(of: text) == nil)
    }

    /// Rows another program wrote: each time as `julianday()` reads it, or none where it reads
    /// none; durations as stored.
    @Test func historyWrittenByHandIsReadAsJulianDayReadsIt() throws {
        let appliedAt = [
            "'2025-01-02T03:04:05.678Z'", "'2025-01-02 03:04:05'", "'2025-01-02T03:04:05.5+01:00'", "2460000.25",
            "'yesterday'", "'2025-02-30T00:00:00.000Z'", "'2025-01-02T03:04'",
        ]
        let rows = appliedAt.enumerated().map { index, value in
            "('library', '1.\(index)', \(value), \(index == 3 ? "2" : "0.25"))"
        }
        try RawSQLite.execute(
            Self.storeTables + """
                INSERT INTO store_migrations_levels(manager, level, baseline) VALUES ('library', '1.6', NULL);
                INSERT INTO store_migrations_history(manager, version, applied_at, duration_seconds) VALUES
                """ + rows.joined(separator: ", "), at: url.path)

        let record = try #require(try SQLiteStore(url: url).readRecords()["library"])
        #expect(record.appliedVersions == (0...6).map { Version(stringLiteral: "1.\($0)") })
        // The column's text affinity stores the number as text, which julianday() reads as a Julian day.
        let expected = try Self.sqliteUnixTimes(of: appliedAt.map { $0.replacingOccurrences(of: "'", with: "") })
        #expect(record.applied.map(\.appliedAt) == expected.map { $0.map(Date.init(timeIntervalSince1970:)) })
        #expect(expected[4] == nil && !expected.enumerated().contains { $0.offset != 4 && $0.element == nil })
        #expect(record.applied.map(\.duration) == [0.25, 0.25, 0.25, 2, 0.25, 0.25, 0.25])
    }

    /// A levels table without history (or without the `baseline` column an older release did
    /// not write) plans from its levels, and planning leaves every file as it was.
    @Test(arguments: [false, true])
    func aStoreWithoutAHistoryTableIsReadFromItsLevels(hasBaselineColumn: Bool) throws {
        try RawSQLite.execute(
            hasBaselineColumn
                ? """
                CREATE TABLE store_migrations_levels(manager TEXT PRIMARY KEY NOT NULL, level TEXT, app_version TEXT, baseline TEXT);
                INSERT INTO store_migrations_levels VALUES ('library', '1.2', '3.0', '1.1'), ('other', NULL, NULL, NULL);
                """
                : """
                CREATE TABLE store_migrations_levels(manager TEXT PRIMARY KEY NOT NULL, level TEXT, app_version TEXT);
                INSERT INTO store_migrations_levels VALUES ('library', '1.2', '3.0'), ('other', NULL, NULL);
                """,
            at: url.path)
        let before = try FolderSnapshot(folder.url)

        let records = try SQLiteStore(url: url).readRecords()
        // A level above the baseline is the baseline: an older release migrated the store.
        #expect(records == [
            "library": MigrationRecord(baseline: "1.2", appVersion: "3.0"),
            "other": MigrationRecord(),
        ])
        let coordinator = MigrationCoordinator(appVersion: "3.0")
        let library = try coordinator.manager("library", store: SQLiteStore(url: url))
        for version: Version in ["1.0", "1.2", "1.3"] { library.register(version) { _ in } }
        #expect(try coordinator.plan().managers.map(\.pending) == [["1.3"]])
        let after = try FolderSnapshot(folder.url)
        #expect(after == before, "planning changed: \(after.changes(since: before))")
    }

    @Test func aHistoryWithoutALevelsTableIsNoRecord() throws {
        try RawSQLite.execute(
            """
            CREATE TABLE store_migrations_history(
                id INTEGER PRIMARY KEY, manager TEXT NOT NULL, version TEXT NOT NULL,
                applied_at TEXT NOT NULL, duration_seconds REAL NOT NULL);
            INSERT INTO store_migrations_history(manager, version, applied_at, duration_seconds)
                VALUES ('library', '1.0', '2025-01-02T03:04:05.000Z', 0.5);
            """, at: url.path)
        #expect(try SQLiteStore(url: url).readRecords() == [:])
    }

    /// Histories of managers interleaved row by row, one manager with history rows only, one
    /// with a levels row only: each record gets its own rows.
    @Test func interleavedHistoriesAreReadManagerByManager() throws {
        try RawSQLite.execute(
            Self.storeTables + """
                INSERT INTO store_migrations_levels(manager, level, app_version, baseline) VALUES
                    ('a', '3', NULL, NULL), ('b', '2', '9.0', NULL), ('levels only', '4', NULL, '4');
                INSERT INTO store_migrations_history(manager, version, applied_at, duration_seconds) VALUES
                    ('a', '1', '2025-01-01T00:00:01.000Z', 1), ('b', '1', '2025-01-01T00:00:02.000Z', 2),
                    ('a', '2', '2025-01-01T00:00:03.000Z', 3), ('a', '3', '2025-01-01T00:00:04.000Z', 4),
                    ('history only', '7', '2025-01-01T00:00:05.000Z', 5), ('b', '2', '2025-01-01T00:00:06.000Z', 6);
                """, at: url.path)
        func applied(_ versions: [(Version, Int)]) -> [AppliedMigration] {
            versions.map { version, second in
                AppliedMigration(
                    version: version, appliedAt: Self.storeUnixTime(of: "2025-01-01T00:00:0\(second).000Z").map(Date.init(timeIntervalSince1970:)),
                    duration: Double(second))
            }
        }
        #expect(try SQLiteStore(url: url).readRecords() == [
            "a": MigrationRecord(applied: applied([(1, 1), (2, 3), (3, 4)])),
            "b": MigrationRecord(applied: applied([(1, 2), (2, 6)]), appVersion: "9.0"),
            "levels only": MigrationRecord(baseline: "4"),
            "history only": MigrationRecord(applied: applied([(7, 5)])),
        ])
    }

    /// The statement has no `ORDER BY`: a connection that scans tables backwards still keeps,
    /// of two rows for one version, the one applied first.
    @Test func historyScannedOutOfIdOrderKeepsTheFirstApplied() throws {
        try RawSQLite.execute(
            Self.storeTables + """
                INSERT INTO store_migrations_levels(manager, level) VALUES ('library', '1.1');
                INSERT INTO store_migrations_history(manager, version, applied_at, duration_seconds) VALUES
                    ('library', '1.0', '2025-01-01T00:00:01.000Z', 1), ('library', '1.1', '2025-01-01T00:00:02.000Z', 2),
                    ('library', '1.0', '2025-01-01T00:00:03.000Z', 3);
                """, at: url.path)
        let reversing = SQLiteStore(url: url) { db in try db.execute("PRAGMA reverse_unordered_selects = ON") }
        // The store's own connection, configured, is the one its records are then read through.
        let scanned = try reversing.read { db in
            try db.rows("SELECT id FROM store_migrations_history").map { try $0[0] as Int }
        }
        #expect(scanned == [3, 2, 1])

        let record = try #require(try reversing.readRecords()["library"])
        #expect(record.applied.map(\.duration) == [1, 2])
        #expect(try SQLiteStore(url: url).readRecords()["library"] == record)
        reversing.close()
    }

    /// A value of the wrong type is an error naming its column, whichever table it is in.
    @Test func aValueOfTheWrongTypeNamesItsColumn() throws {
        try RawSQLite.execute(
            Self.storeTables + """
                INSERT INTO store_migrations_levels(manager, level) VALUES ('library', '1.0');
                INSERT INTO store_migrations_history(manager, version, applied_at, duration_seconds)
                    VALUES ('library', '1.0', '2025-01-01T00:00:01.000Z', 'slow');
                """, at: url.path)
        let error = try #require(#expect(throws: SQLiteError.self) { _ = try SQLiteStore(url: url).readRecords() })
        #expect(error.code == SQLITE_MISMATCH)
        #expect(error.message.contains("\"duration_seconds\"") && error.message.contains("slow"), "\(error)")

        try RawSQLite.execute(
            "UPDATE store_migrations_history SET duration_seconds = 1, version = X'31'", at: url.path)
        let unreadable = try #require(#expect(throws: MigrationError.self) { _ = try SQLiteStore(url: url).readRecords() })
        guard case let .unreadableState(manager, _, reason) = unreadable else {
            Issue.record("unexpected \(unreadable)")
            return
        }
        #expect(manager == "library" && reason.contains("its version in table store_migrations_history is") && reason.contains("<1 bytes>"), "\(reason)")
    }
}
