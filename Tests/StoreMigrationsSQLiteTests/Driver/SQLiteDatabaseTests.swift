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

extension TemporaryFolder {
    /// The test database in this folder, opened on its own, outside any store.
    func openDatabase(_ name: String = "test.sqlite", busyTimeout: TimeInterval = 1) throws -> Database {
        try Database(path: file(name).path, busyTimeout: busyTimeout)
    }
}

/// Collects the fractions a migration context reports, from whichever thread reports them.
final class ProgressLog: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [Double] = []

    var fractions: [Double] { lock.lock(); defer { lock.unlock() }; return storage }

    func append(_ fraction: Double) {
        lock.lock(); defer { lock.unlock() }
        storage.append(fraction)
    }

    func context(manager: String = "library", version: Version = "1.0", cancelled: Bool = false) -> MigrationContext {
        MigrationContext(manager: manager, version: version, levelBefore: nil, run: run(cancelled: cancelled), step: 0)
    }

    /// A run that records the progress of its step into this log.
    func run(cancelled: Bool = false) -> RecordingRun {
        RecordingRun(log: self, isCancelled: cancelled)
    }
}

/// A run that records the progress its step reports.
final class RecordingRun: MigrationRunControl {
    let log: ProgressLog
    let isCancelled: Bool
    private let stepProgress = Progress(totalUnitCount: MigrationContext.progressUnits)

    init(log: ProgressLog, isCancelled: Bool) {
        self.log = log
        self.isCancelled = isCancelled
    }

    func progress(ofStep step: Int) -> Progress { stepProgress }
    func reportProgress(ofStep step: Int, fraction: Double) {
        stepProgress.completedUnitCount = MigrationContext.units(fraction)
        log.append(fraction)
    }
}

@Suite struct SQLiteDatabaseTests {
    let scratch: TemporaryFolder
    let db: Database

    init() throws {
        scratch = try TemporaryFolder()
        db = try scratch.openDatabase()
    }

    // MARK: Values and binding

    @Test func everyStorageClassRoundTrips() throws {
        try db.execute("CREATE TABLE value(id INTEGER PRIMARY KEY, v)")
        let values: [DatabaseValue] = [
            .null, .integer(0), .integer(Int64.max), .integer(Int64.min), .real(3.25), .real(-0.5),
            .text("héllo 🌍"), .text(""), .text("a\u{0}b"), .blob(Data([0, 1, 255])), .blob(Data()),
        ]
        let insert = try db.prepare("INSERT INTO value(v) VALUES (?)")
        for value in values {
            try insert.execute(arguments: [value])
        }
        let stored = try db.rows("SELECT v FROM value ORDER BY id").map { $0.values[0] }
        #expect(stored == values)
        #expect(try db.scalar("SELECT typeof(v) FROM value WHERE id = 11", as: String.self) == "blob")
    }

    @Test func swiftTypesBindAndReadBack() throws {
        try db.execute("CREATE TABLE item(i INTEGER, i64 INTEGER, d REAL, s TEXT, data BLOB, flag INTEGER, none TEXT)")
        let data = Data("bytes".utf8)
        try db.execute(
            "INSERT INTO item VALUES (?, ?, ?, ?, ?, ?, ?)",
            arguments: [
                DatabaseValue(42), DatabaseValue(Int64(1) << 40), DatabaseValue(2.5), DatabaseValue("text"),
                DatabaseValue(data), DatabaseValue(true), DatabaseValue(String?.none),
            ])
        let row = try #require(try db.row("SELECT * FROM item"))
        #expect(try row["i"] as Int == 42)
        #expect(try row["i64"] as Int64 == 1 << 40)
        #expect(try row["d"] as Double == 2.5)
        #expect(try row["s"] as String == "text")
        #expect(try row["data"] as Data == data)
        #expect(try row["flag"] as Bool == true)
        #expect(try row["none"] as String? == nil)
        #expect(try row["i"] as Double == 42)
        #expect(try row[0] as Int? == 42)
        #expect(try row["I64"] as Int64 == 1 << 40, "column names compare case-insensitively")
    }

    @Test func literalArgumentsReadNaturally() throws {
        try db.execute("CREATE TABLE t(a, b, c, d, e)")
        try db.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?)", arguments: [1, "x", nil, 2.5, true])
        let row = try #require(try db.row("SELECT * FROM t"))
        #expect(row.values == [.integer(1), .text("x"), .null, .real(2.5), .integer(1)])
        #expect(row.columnNames == ["a", "b", "c", "d", "e"])
    }

    @Test func rowSubscriptsThrowNamingTheColumnAndStatement() throws {
        try db.execute("CREATE TABLE t(a TEXT, b TEXT)")
        try db.execute("INSERT INTO t VALUES (NULL, 'text')")
        let sql = "SELECT a, b FROM t"
        let row = try #require(try db.row(sql))

        let null = try #require(#expect(throws: SQLiteError.self) { _ = try row["a"] as String })
        #expect(null.code == SQLITE_MISMATCH)
        #expect(null.message.contains("\"a\""))
        #expect(null.sql == sql)

        let mismatch = try #require(#expect(throws: SQLiteError.self) { _ = try row["b"] as Int })
        #expect(mismatch.code == SQLITE_MISMATCH)

        let missing = try #require(#expect(throws: SQLiteError.self) { _ = try row["c"] as String? })
        #expect(missing.message.contains("no column \"c\""))

        let range = try #require(#expect(throws: SQLiteError.self) { _ = try row[5] as String? })
        #expect(range.code == SQLITE_RANGE)
    }

    // MARK: Errors

    @Test func failingStatementErrorCarriesCodeMessageSQLAndPath() throws {
        let sql = "INSERT INTO missing VALUES (1)"
        let error = try #require(#expect(throws: SQLiteError.self) { try db.execute(sql) })
        #expect(error.code == SQLITE_ERROR)
        #expect(error.message == "no such table: missing")
        #expect(error.sql == sql)
        #expect(error.path == db.path)
        #expect(error.description.contains(db.path))
        #expect(error.description.contains(sql))
    }

    @Test func aScriptsFailingStatementIsNamedAloneWithoutTheSpaceAroundIt() throws {
        try db.execute("CREATE TABLE t(a INTEGER NOT NULL)")
        let error = try #require(#expect(throws: SQLiteError.self) {
            try db.execute("INSERT INTO t VALUES (1);\n\t  INSERT INTO t VALUES (NULL) \n;\nINSERT INTO t VALUES (3)")
        })
        #expect(error.sql == "INSERT INTO t VALUES (NULL) \n;")
        #expect(try db.scalar("SELECT group_concat(a) FROM t", as: String.self) == "1", "the statements before it ran, none after")
        #expect(try db.prepare("\n  SELECT a FROM t  \n").sql == "SELECT a FROM t")
    }

    @Test func constraintFailureHasExtendedCode() throws {
        try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT UNIQUE)")
        try db.execute("INSERT INTO t(name) VALUES ('a')")
        let error = try #require(#expect(throws: SQLiteError.self) {
            try db.execute("INSERT INTO t(name) VALUES (?)", arguments: ["a"])
        })
        #expect(error.isConstraintViolation)
        #expect(error.extendedCode == SQLITE_CONSTRAINT | (8 << 8), "SQLITE_CONSTRAINT_UNIQUE")
        #expect(error.message.contains("UNIQUE constraint failed: t.name"))
    }

    @Test func fileThatIsNotADatabaseIsRefusedAndLeftUntouched() throws {
        let url = scratch.file("notes.txt")
        let bytes = Data(String(repeating: "these are my notes, not a database\n", count: 200).utf8)
        try bytes.write(to: url)
        let error = try #require(#expect(throws: SQLiteError.self) {
            _ = try Database(path: url.path, busyTimeout: 0.1)
        })
        #expect(error.isNotADatabase)
        #expect(error.description.contains(url.path))
        #expect(try Data(contentsOf: url) == bytes)
    }

    // MARK: Statements

    @Test func multiStatementSQLRunsInOrderAndSharesArguments() throws {
        try db.execute("""
            CREATE TABLE t(a INTEGER);
            -- a comment between statements
            INSERT INTO t VALUES (?); INSERT INTO t VALUES (?), (?);
            """, arguments: [1, 2, 3])
        #expect(try db.rows("SELECT a FROM t ORDER BY a").map { try $0["a"] as Int } == [1, 2, 3])

        let leftover = try #require(#expect(throws: SQLiteError.self) {
            try db.execute("INSERT INTO t VALUES (?)", arguments: [4, 5])
        })
        #expect(leftover.code == SQLITE_RANGE)

        let failing = try #require(#expect(throws: SQLiteError.self) {
            try db.execute("INSERT INTO t VALUES (6); INSERT INTO nowhere VALUES (7)")
        })
        #expect(failing.sql == "INSERT INTO nowhere VALUES (7)")
    }

    @Test func preparedStatementIsReusedWithBindStepReset() throws {
        try db.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, square INTEGER)")
        let insert = try db.prepare("INSERT INTO t(square) VALUES (?)")
        for number in 1...100 {
            try insert.execute(arguments: [.integer(Int64(number * number))])
            #expect(db.lastInsertedRowID == Int64(number))
        }
        try db.execute("UPDATE t SET square = square + 1 WHERE id <= 10")
        #expect(db.changesCount == 10)

        let query = try db.prepare("SELECT square FROM t WHERE id = ?")
        for id in [3, 7, 3] {
            try query.bind([.integer(Int64(id))])
            let row = try #require(try query.step())
            #expect(try row[0] as Int == id * id + 1)
            #expect(try query.step() == nil)
        }
        query.reset()
        #expect(try query.step()?.values == [.integer(10)], "reset keeps the bound argument")

        let wrongCount = try #require(#expect(throws: SQLiteError.self) { try query.bind([1, 2]) })
        #expect(wrongCount.code == SQLITE_RANGE)
        #expect(throws: SQLiteError.self) { _ = try db.prepare("SELECT 1; SELECT 2") }
    }

    @Test func scalarAndForEachRow() throws {
        try db.execute("CREATE TABLE t(a INTEGER)")
        #expect(try db.scalar("SELECT a FROM t", as: Int.self) == nil)
        try db.execute("INSERT INTO t VALUES (1), (2), (3)")
        #expect(try db.scalar("SELECT count(*) FROM t", as: Int.self) == 3)
        var sum = 0
        try db.forEachRow("SELECT a FROM t WHERE a > ?", arguments: [1]) { sum += try $0["a"] as Int }
        #expect(sum == 5)
    }

    // MARK: transformRows

    @Test func transformRowsVisitsEveryRowOnceAndReportsProgress() throws {
        try db.execute("CREATE TABLE event(id INTEGER PRIMARY KEY, title TEXT, guid TEXT)")
        try db.execute("BEGIN")
        let insert = try db.prepare("INSERT INTO event(title) VALUES (?)")
        for number in 0..<10_003 {
            try insert.execute(arguments: [.text("event \(number)")])
        }
        let log = ProgressLog()
        let context = log.context()
        db.context = context
        var visits: [Int64: Int] = [:]
        let updated = try db.transformRows(in: "event", columns: ["id", "title", "guid"], batchSize: 1_000) { row in
            visits[try row["id"], default: 0] += 1
            #expect(try row["guid"] as String? == nil)
            return ["guid": .text("guid-" + (try row["title"] as String))]
        }
        try db.execute("COMMIT")

        #expect(updated == 10_003)
        #expect(visits.count == 10_003)
        #expect(visits.values.allSatisfy { $0 == 1 })
        #expect(try db.scalar("SELECT count(*) FROM event WHERE guid = 'guid-' || title", as: Int.self) == 10_003)
        #expect(log.fractions.count >= 11)
        #expect(log.fractions == log.fractions.sorted())
        #expect(log.fractions.last == 1)
        #expect(context.progress.fractionCompleted == 1)
    }

    @Test func transformRowsFiltersSkipsAndKeepsUnlistedValues() throws {
        try db.execute("""
            CREATE TABLE person(first TEXT, last TEXT, full TEXT);
            INSERT INTO person VALUES ('Ada', 'Lovelace', NULL), ('Alan', 'Turing', 'kept'), ('Grace', 'Hopper', NULL);
            """)
        let updated = try db.transformRows(
            in: "person", columns: ["first", "last", "full"], where: "full IS NULL", batchSize: 1
        ) { row in
            let first: String = try row["first"]
            if first == "Grace" { return nil }
            return ["full": .text(first + " " + (try row["last"] as String)), "first": .text(first.uppercased())]
        }
        #expect(updated == 1)
        let rows = try db.rows("SELECT first, last, full FROM person ORDER BY rowid").map(\.values)
        #expect(rows == [
            [.text("ADA"), .text("Lovelace"), .text("Ada Lovelace")],
            [.text("Alan"), .text("Turing"), .text("kept")],
            [.text("Grace"), .text("Hopper"), .null],
        ])
        // A column the transform did not list: the store's typed error, not a SQLite code.
        let unlisted = try #require(throws: SQLiteStoreError.self) {
            try db.transformRows(in: "person", columns: ["first"]) { _ in ["last": "x"] }
        }
        guard case let .unlistedColumn(column, table, listed) = unlisted.reason else {
            Issue.record("expected unlistedColumn, got \(unlisted)")
            return
        }
        #expect(column == "last" && table == "person" && listed == ["first"])
    }

    @Test func transformRowsPagesWithoutRowIDTablesByPrimaryKey() throws {
        try db.execute("CREATE TABLE pair(a INTEGER, b TEXT, v INTEGER, PRIMARY KEY (a, b)) WITHOUT ROWID")
        let insert = try db.prepare("INSERT INTO pair VALUES (?, ?, 0)")
        for a in 0..<7 {
            for b in ["x", "y", "z"] { try insert.execute(arguments: [.integer(Int64(a)), .text(b)]) }
        }
        var count = 0
        try db.transformRows(in: "pair", columns: ["a", "v"], batchSize: 4) { row in
            count += 1
            return ["v": .integer(try row["a"] as Int64 * 10)]
        }
        #expect(count == 21)
        #expect(try db.scalar("SELECT count(*) FROM pair WHERE v = a * 10", as: Int.self) == 21)

        let keyChange = try #require(#expect(throws: SQLiteError.self) {
            try db.transformRows(in: "pair", columns: ["a"]) { _ in ["a": 99] }
        })
        #expect(keyChange.code == SQLITE_MISUSE)
    }

    @Test func transformRowsStopsWhenTheRunIsCancelled() throws {
        try db.execute("CREATE TABLE t(v INTEGER); INSERT INTO t VALUES (1);")
        db.context = ProgressLog().context(cancelled: true)
        #expect(throws: CancellationError.self) {
            try db.transformRows(in: "t", columns: ["v"]) { _ in ["v": 2] }
        }
        #expect(try db.scalar("SELECT v FROM t", as: Int.self) == 1)
    }
}
