import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

/// The one writer of the SQL stores' record tables, in both dialects, through a connection that
/// only records the statements it is given. Real databases are written in the SQLite and
/// PostgreSQL suites.
@Suite struct SQLRecordTablesTests {
    final class StatementLog: SQLRecordConnection {
        var statements: [String] = []
        func executeRecordStatement(_ sql: String, _ arguments: [SQLRecordValue]) throws {
            let shown = arguments.map { value -> String in
                switch value {
                case .text(let text): return "'\(text)'"
                case .real: return "<real>"
                case .null: return "NULL"
                }
            }
            let firstLine = sql.split(separator: "\n").first.map(String.init) ?? sql
            statements.append(firstLine.trimmingCharacters(in: .whitespaces) + " " + shown.joined(separator: ", "))
        }
    }

    static let sqlite = SQLRecordTables(
        levels: "levels", history: "history",
        dialect: SQLRecordDialect(
            placeholder: { _ in "?" }, timestamp: { "strftime(\($0))" }, historyKey: "INTEGER PRIMARY KEY",
            timestampType: "TEXT", realType: "REAL", columnNames: { "SELECT name FROM pragma_table_info('\($0)')" },
            addsColumnsIfNotExists: false))
    static let postgreSQL = SQLRecordTables(
        levels: "s.levels", history: "s.history",
        dialect: SQLRecordDialect(
            placeholder: { "$\($0)" }, timestamp: { "to_timestamp(\($0))" }, historyKey: "bigserial PRIMARY KEY",
            timestampType: "timestamptz", realType: "double precision", columnNames: { "SELECT attname AS name FROM cols('\($0)')" },
            addsColumnsIfNotExists: true))

    static func applied(_ versions: Version...) -> [AppliedMigration] { versions.map { AppliedMigration(version: $0) } }

    @Test func oneStepWritesItsLevelsRowAndOneHistoryRow() throws {
        let log = StatementLog()
        let old = ["library": MigrationRecord(applied: Self.applied("1", "2"))]
        let new = ["library": MigrationRecord(applied: Self.applied("1", "2", "3"))]
        try Self.postgreSQL.write(new, over: old, through: log)
        #expect(log.statements == [
            "INSERT INTO s.levels(manager, level, app_version, baseline, progress) 'library', '3', NULL, NULL, NULL",
            "INSERT INTO s.history(manager, version, applied_at, duration_seconds, name, fingerprint) 'library', '3', <real>, <real>, NULL, NULL",
        ])
    }

    @Test func manyNewRowsGoInInsertsOfAPowerOfTwoRowsEachInVersionOrder() throws {
        final class Inserts: SQLRecordConnection {
            var runs: [(sql: String, versions: [String])] = []
            func executeRecordStatement(_ sql: String, _ arguments: [SQLRecordValue]) throws {
                guard sql.hasPrefix("INSERT INTO s.history") else { return }
                let versions = stride(from: 1, to: arguments.count, by: SQLRecordTables.columnsPerHistoryRow).map { index in
                    guard case .text(let version) = arguments[index] else { return "?" }
                    return version
                }
                runs.append((sql, versions))
            }
        }
        let inserts = Inserts()
        let versions = (1...70).map { Version($0) }
        try Self.postgreSQL.write(
            ["library": MigrationRecord(applied: versions.map { AppliedMigration(version: $0) })], over: [:], through: inserts)
        #expect(inserts.runs.map(\.versions.count) == [16, 16, 16, 16, 4, 2])
        #expect(inserts.runs.flatMap(\.versions) == versions.map(\.description))
        let two = try #require(inserts.runs.last?.sql)
        #expect(two == """
            INSERT INTO s.history(manager, version, applied_at, duration_seconds, name, fingerprint)
            VALUES ($1, $2, to_timestamp($3), $4, $5, $6), ($7, $8, to_timestamp($9), $10, $11, $12)
            """)
        #expect(inserts.runs[0].sql.hasSuffix("($91, $92, to_timestamp($93), $94, $95, $96)"))
        #expect(SQLRecordTables.historyRowsPerInsert(remaining: 1) == 1)
        #expect(SQLRecordTables.historyRowsPerInsert(remaining: 31) == 16)
        #expect(SQLRecordTables.historyRowsPerInsert(remaining: 500) == 16)
    }

    @Test func unchangedManagersWriteNothingAndForgottenOnesAreDeleted() throws {
        let log = StatementLog()
        let kept = MigrationRecord(applied: Self.applied("1"))
        try Self.sqlite.write(["kept": kept], over: ["kept": kept, "gone": MigrationRecord(baseline: "2")], through: log)
        #expect(log.statements == ["DELETE FROM levels WHERE manager = ? 'gone'", "DELETE FROM history WHERE manager = ? 'gone'"])
    }

    @Test func versionsThatLeftTheSetAreDeletedAndNewOnesInserted() throws {
        let log = StatementLog()
        try Self.sqlite.write(
            ["m": MigrationRecord(applied: Self.applied("1", "3", "4"), appVersion: "2.0")],
            over: ["m": MigrationRecord(applied: Self.applied("1", "2", "3"))], through: log)
        #expect(log.statements == [
            "INSERT INTO levels(manager, level, app_version, baseline, progress) 'm', '4', '2.0', NULL, NULL",
            "DELETE FROM history WHERE manager = ? AND version = ? 'm', '2'",
            "INSERT INTO history(manager, version, applied_at, duration_seconds, name, fingerprint) 'm', '4', <real>, <real>, NULL, NULL",
        ])
    }

    @Test func tablesOfTheFirstReleaseGetEveryLaterColumnAndTheirLevelsBecomeBaselines() {
        #expect(Self.sqlite.upgradeStatements(present: []) == [
            "ALTER TABLE levels ADD COLUMN baseline text", "UPDATE levels SET baseline = level",
            "ALTER TABLE levels ADD COLUMN progress text", "ALTER TABLE history ADD COLUMN name text",
            "ALTER TABLE history ADD COLUMN fingerprint text",
        ])
        #expect(Self.postgreSQL.upgradeStatements(present: [.baseline, .name, .fingerprint]) == [
            "ALTER TABLE s.levels ADD COLUMN IF NOT EXISTS progress text"
        ])
        #expect(Self.sqlite.upgradeStatements(present: Set(SQLRecordTables.LaterColumn.allCases)).isEmpty)
    }

    @Test func theColumnsQueryAsksBothTablesInOneStatement() {
        #expect(Self.sqlite.presentColumnsQuery == """
            SELECT 'levels.' || name FROM (SELECT name FROM pragma_table_info('levels')) AS c WHERE name IN ('baseline', 'progress') \
            UNION ALL SELECT 'history.' || name FROM (SELECT name FROM pragma_table_info('history')) AS c WHERE name IN ('name', 'fingerprint')
            """)
    }

    @Test func progressIsWrittenAsJSONWithTheLevelsRow() throws {
        let log = StatementLog()
        var record = MigrationRecord(applied: Self.applied("1"))
        record.setProgress(StepProgress(version: "2", cursor: "rowid 40", done: 40, total: 100, batches: 2, elapsed: 0.5))
        try Self.sqlite.write(["m": record], over: ["m": MigrationRecord(applied: Self.applied("1"))], through: log)
        #expect(log.statements == [
            "INSERT INTO levels(manager, level, app_version, baseline, progress) 'm', '1', NULL, NULL, "
                + #"'[{"batches":2,"cursor":"rowid 40","done":40,"elapsed":0.5,"total":100,"version":"2"}]'"#
        ])
        #expect(try StoredProgress.list(fromJSON: #"[{"batches":2,"cursor":"rowid 40","done":40,"elapsed":0.5,"total":100,"version":"2"}]"#)
            == record.inProgress)
    }

    @Test func theDifferenceWalksBothSortedSetsOnce() {
        let (removed, added, relabelled) = SQLRecordTables.difference(
            from: Self.applied("1", "1.1", "2", "5"), to: Self.applied("0.9", "1.1", "3", "5", "6"))
        #expect(removed.map(\.version) == ["1", "2"])
        #expect(added.map(\.version) == ["0.9", "3", "6"])
        #expect(relabelled.isEmpty)
    }

    @Test func aNewNameOrFingerprintOfAnAppliedMigrationUpdatesItsHistoryRow() throws {
        let log = StatementLog()
        var record = MigrationRecord(applied: [AppliedMigration(version: "1", name: "old", fingerprint: MigrationFingerprint(of: "a"))])
        let old = record
        record.relabel("1", name: "add guids", fingerprint: MigrationFingerprint(of: "b"))
        try Self.postgreSQL.write(["m": record], over: ["m": old], through: log)
        #expect(log.statements == [
            "INSERT INTO s.levels(manager, level, app_version, baseline, progress) 'm', '1', NULL, NULL, NULL",
            "UPDATE s.history SET name = $1, fingerprint = $2 WHERE manager = $3 AND version = $4 'add guids', "
                + "'\(MigrationFingerprint(of: "b").rawValue)', 'm', '1'",
        ])
    }

    @Test func bothDialectsCreateTheSameTwoTables() {
        #expect(Self.sqlite.createStatements.map { $0.split(separator: "\n")[1] }
            == ["    manager text PRIMARY KEY NOT NULL, level text, app_version text, baseline text, progress text)",
                "    id INTEGER PRIMARY KEY, manager text NOT NULL, version text NOT NULL,"])
        #expect(Self.postgreSQL.createStatements[1].contains("id bigserial PRIMARY KEY")
            && Self.postgreSQL.createStatements[1].contains("applied_at timestamptz NOT NULL"))
    }
}
