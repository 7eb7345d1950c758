import CLibPQ
import Foundation
import StoreMigrations

/// How a ``PostgreSQLStore`` keeps its records: the levels table gives each manager's baseline
/// and app version, the history table its applied set with when and how long.
extension PostgreSQLStore {
    /// Creates the schema (unless it is `public`) and the record tables if they are missing.
    func createStoreTables(_ db: PostgreSQLConnection) throws {
        var statements: [String] = []
        if schema != "public" { statements.append("CREATE SCHEMA IF NOT EXISTS \(PostgreSQLConnection.quoted(schema))") }
        statements.append("""
            CREATE TABLE IF NOT EXISTS \(qualified(Self.levelsTable))(
                manager text PRIMARY KEY, level text, app_version text, baseline text)
            """)
        statements.append("""
            CREATE TABLE IF NOT EXISTS \(qualified(Self.historyTable))(
                id bigserial PRIMARY KEY, manager text NOT NULL, version text NOT NULL,
                applied_at timestamptz NOT NULL, duration_seconds double precision NOT NULL)
            """)
        try db.execute(statements.joined(separator: ";\n"))
    }

    /// Every manager's record, in one round trip; inside the caller's transaction, or (`snapshot`)
    /// in a read-only repeatable-read transaction of its own.
    func records(in db: PostgreSQLConnection, hasHistory: Bool = true, snapshot: Bool = false) throws -> [String: MigrationRecord] {
        var statements = ["SELECT manager, level, app_version, baseline FROM \(qualified(Self.levelsTable))"]
        // The whole history, every time: a copy kept between reads could miss a row changed in
        // place by another program, and the step executor trusts this read.
        if hasHistory {
            statements.append("""
                SELECT manager, version, extract(epoch FROM applied_at)::float8, duration_seconds
                FROM \(qualified(Self.historyTable)) ORDER BY id
                """)
        }
        if snapshot {
            statements.insert("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", at: 0)
            statements.append("COMMIT")
        }
        let results: [[PostgreSQLRow]]
        do {
            results = try db.queryEach(statements.joined(separator: ";\n"))
        } catch let error as PostgreSQLError where error.sqlState == "42703" {
            throw try foreignTableError(error, in: db)
        }
        let offset = snapshot ? 1 : 0
        var records: [String: MigrationRecord] = [:]
        var levels: [String: Version] = [:]
        for row in results[offset] {
            let manager: String = try row[0]
            records[manager] = MigrationRecord(
                baseline: try version(row[3], column: "baseline", of: manager),
                appVersion: try version(row[2], column: "app_version", of: manager))
            levels[manager] = try version(row[1], column: "level", of: manager)
        }
        if hasHistory {
            var applied: [String: [AppliedMigration]] = [:]
            for row in results[offset + 1] {
                let manager: String = try row[0]
                guard let version = try version(row[1], column: "version in \(Self.historyTable)", of: manager) else { continue }
                let seconds: Double? = try row[2]
                applied[manager, default: []].append(AppliedMigration(
                    version: version, appliedAt: seconds.map(Date.init(timeIntervalSince1970:)), duration: try row[3]))
            }
            for (manager, migrations) in applied {
                let record = records[manager] ?? MigrationRecord()
                records[manager] = MigrationRecord(applied: migrations, baseline: record.baseline, appVersion: record.appVersion)
            }
        }
        // A level above what the rest gives (rows written by hand, or by another tool) raises the baseline to it.
        for (manager, level) in levels where records[manager]?.level.map({ level > $0 }) ?? true {
            records[manager, default: MigrationRecord()].baseline = level
        }
        return records
    }

    /// Writes what changed between `old` and `new`: each changed manager's levels row (with its
    /// `level`, for people and tools reading the table) and its history rows.
    func write(_ new: [String: MigrationRecord], over old: [String: MigrationRecord], in db: PostgreSQLConnection) throws {
        let levels = qualified(Self.levelsTable), history = qualified(Self.historyTable)
        for manager in old.keys where new[manager] == nil {
            try db.execute("DELETE FROM \(levels) WHERE manager = $1", [.text(manager)])
            try db.execute("DELETE FROM \(history) WHERE manager = $1", [.text(manager)])
        }
        for (manager, record) in new where old[manager] != record {
            try db.execute(
                """
                INSERT INTO \(levels)(manager, level, app_version, baseline) VALUES ($1, $2, $3, $4)
                ON CONFLICT (manager) DO UPDATE SET
                    level = excluded.level, app_version = excluded.app_version, baseline = excluded.baseline
                """,
                [
                    .text(manager), record.level.map { .text($0.description) } ?? .null,
                    record.appVersion.map { .text($0.description) } ?? .null,
                    record.baseline.map { .text($0.description) } ?? .null,
                ])
            let previous = old[manager] ?? MigrationRecord()
            let removed = Set(previous.appliedVersions).subtracting(record.appliedVersions)
            for version in removed.sorted() {
                try db.execute(
                    "DELETE FROM \(history) WHERE manager = $1 AND version = $2", [.text(manager), .text(version.description)])
            }
            let earlier = Set(previous.appliedVersions)
            for migration in record.applied where !earlier.contains(migration.version) {
                try db.execute(
                    """
                    INSERT INTO \(history)(manager, version, applied_at, duration_seconds)
                    VALUES ($1, $2, to_timestamp($3), $4)
                    """,
                    [
                        .text(manager), .text(migration.version.description),
                        .double((migration.appliedAt ?? Date()).timeIntervalSince1970), .double(migration.duration ?? 0),
                    ])
            }
        }
    }

    /// The error for a record table whose columns are not the store's.
    private func foreignTableError(_ error: PostgreSQLError, in db: PostgreSQLConnection) throws -> PostgreSQLError {
        let table = error.message.contains(Self.historyTable) ? Self.historyTable : Self.levelsTable
        if db.transactionStatus == PQTRANS_INERROR { PQclear(PQexec(db.handle, "ROLLBACK")) }
        let columns = (try? db.query(
            """
            SELECT column_name FROM information_schema.columns
            WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position
            """, [.text(schema), .text(table)]).map { try $0[0] as String }) ?? []
        return PostgreSQLError(
            kind: .foreignStoreTable(table: "\(schema).\(table)"), sqlState: error.sqlState,
            message: "\(error.message); its columns are \(columns.joined(separator: ", "))",
            detail: error.detail, hint: error.hint, sql: error.sql, store: description)
    }

    private func version(_ value: PostgreSQLValue, column: String, of manager: String) throws -> Version? {
        switch value {
        case .null:
            return nil
        case .text(let text):
            do {
                return try Version(parsing: text)
            } catch {
                throw MigrationError.unreadableState(
                    manager: manager, store: description, reason: "its \(column) in table \(Self.levelsTable) is \(error)")
            }
        default:
            throw MigrationError.unreadableState(
                manager: manager, store: description, reason: "its \(column) in table \(Self.levelsTable) is \(value), not text")
        }
    }
}
