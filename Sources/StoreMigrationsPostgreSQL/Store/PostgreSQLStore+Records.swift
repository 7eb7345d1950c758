import CLibPQ
import Foundation
import StoreMigrations

/// How a ``PostgreSQLStore`` keeps its records: the levels table gives each manager's baseline
/// and app version, the history table its applied set with when and how long.
extension PostgreSQLStore {
    /// The record tables, written as SQLite's are, in PostgreSQL's dialect.
    var recordTables: SQLRecordTables {
        SQLRecordTables(
            levels: qualified(Self.levelsTable), history: qualified(Self.historyTable),
            dialect: SQLRecordDialect(
                placeholder: { "$\($0)" }, timestamp: { "to_timestamp(\($0))" },
                historyKey: "bigserial PRIMARY KEY", timestampType: "timestamptz", realType: "double precision"))
    }

    /// Creates the schema (unless it is `public`) and the record tables if they are missing.
    func createStoreTables(_ db: PostgreSQLConnection) throws {
        var statements: [String] = []
        if schema != "public" { statements.append("CREATE SCHEMA IF NOT EXISTS \(PostgreSQLConnection.quoted(schema))") }
        statements += recordTables.createStatements
        statements.append("ALTER TABLE \(qualified(Self.levelsTable)) ADD COLUMN IF NOT EXISTS progress text")
        try db.execute(statements.joined(separator: ";\n"))
    }

    /// Every manager's record, in one round trip; inside the caller's transaction, or (`snapshot`)
    /// in a read-only repeatable-read transaction of its own.
    func records(
        in db: PostgreSQLConnection, hasHistory: Bool = true, hasProgress: Bool = true, snapshot: Bool = false
    ) throws -> [String: MigrationRecord] {
        var statements = [
            "SELECT manager, level, app_version, baseline, \(hasProgress ? "progress" : "NULL") FROM \(qualified(Self.levelsTable))"
        ]
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
        var stored: [String: StoredRecord] = [:]
        for row in results[offset] {
            let manager: String = try row[0]
            stored[manager] = StoredRecord(
                level: try version(row[1], column: "level", of: manager),
                baseline: try version(row[3], column: "baseline", of: manager),
                appVersion: try version(row[2], column: "app_version", of: manager),
                inProgress: try progress(row[4], of: manager))
        }
        if hasHistory {
            for row in results[offset + 1] {
                let manager: String = try row[0]
                guard let version = try version(row[1], column: "version in \(Self.historyTable)", of: manager) else { continue }
                let seconds: Double? = try row[2]
                stored[manager, default: StoredRecord()].applied.append(AppliedMigration(
                    version: version, appliedAt: seconds.map(Date.init(timeIntervalSince1970:)), duration: try row[3]))
            }
        }
        return stored.mapValues(MigrationRecord.init(decoding:))
    }

    /// Writes what changed between `old` and `new`, in the step's transaction.
    func write(_ new: [String: MigrationRecord], over old: [String: MigrationRecord], in db: PostgreSQLConnection) throws {
        try recordTables.write(new, over: old, through: db)
    }

    /// The error for a record table whose columns are not the store's.
    private func foreignTableError(_ error: PostgreSQLError, in db: PostgreSQLConnection) throws -> PostgreSQLError {
        let table = error.message.contains(Self.historyTable) ? Self.historyTable : Self.levelsTable
        if db.transactionStatus == PQTRANS_INERROR { PQclear(PQexec(db.handle, "ROLLBACK")) }
        let columns = (try? db.rows(
            """
            SELECT column_name FROM information_schema.columns
            WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position
            """, arguments: [.text(schema), .text(table)]).map { try $0[0] as String }) ?? []
        return PostgreSQLError(
            kind: .foreignStoreTable(table: "\(schema).\(table)"), sqlState: error.sqlState,
            message: "\(error.message); its columns are \(columns.joined(separator: ", "))",
            detail: error.detail, hint: error.hint, sql: error.sql, store: description)
    }

    private func progress(_ value: PostgreSQLValue, of manager: String) throws -> [StepProgress] {
        switch value {
        case .null: return []
        case .text(let text): return try StoredProgress.list(column: text, of: manager, store: description, table: Self.levelsTable)
        default: return try StoredProgress.list(column: nil, other: "\(value)", of: manager, store: description, table: Self.levelsTable)
        }
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

extension PostgreSQLConnection: SQLRecordConnection {
    package func executeRecordStatement(_ sql: String, _ arguments: [SQLRecordValue]) throws {
        _ = try execute(sql, arguments: arguments.map { value in
            switch value {
            case .text(let text): return .text(text)
            case .real(let number): return .double(number)
            case .null: return .null
            }
        })
    }
}
