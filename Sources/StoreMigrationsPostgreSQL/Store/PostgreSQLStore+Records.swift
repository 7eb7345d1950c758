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
                historyKey: "bigserial PRIMARY KEY", timestampType: "timestamptz", realType: "double precision",
                columnNames: { table in
                    let literal = "'" + table.replacingOccurrences(of: "'", with: "''") + "'"
                    return "SELECT attname AS name FROM pg_attribute WHERE attrelid = to_regclass(\(literal)) AND attnum > 0 AND NOT attisdropped"
                },
                addsColumnsIfNotExists: true))
    }

    /// Creates the schema (unless it is `public`) and the record tables if they are missing, and
    /// gives tables of an earlier release the columns this one writes. Only a missing column is
    /// added: `ALTER TABLE` locks its table against every reader, even when it changes nothing.
    func createStoreTables(_ db: PostgreSQLConnection) throws {
        let tables = recordTables
        var statements: [String] = []
        if schema != "public" { statements.append("CREATE SCHEMA IF NOT EXISTS \(PostgreSQLConnection.quoted(schema))") }
        statements += tables.createStatements
        statements.append(tables.presentColumnsQuery)
        let present = try db.queryEach(statements.joined(separator: ";\n")).last?.compactMap { row in
            SQLRecordTables.LaterColumn(rawValue: try row[0])
        } ?? []
        let upgrades = tables.upgradeStatements(present: Set(present))
        guard !upgrades.isEmpty else { return }
        do {
            try db.execute(upgrades.joined(separator: ";\n"))
        } catch let error as PostgreSQLError where error.sqlState == "42703" {
            // A table of that name whose columns are not a levels table's: another program's.
            throw try foreignTableError(error, in: db)
        }
    }

    /// Every manager's record, in one round trip; inside the caller's transaction, or (`snapshot`)
    /// in a read-only repeatable-read transaction of its own. `columnsMayBeMissing`: the tables
    /// may be an older release's, without `progress` or the history's names and fingerprints;
    /// such columns are read through the row's JSON, which names no column that may not exist.
    func records(
        in db: PostgreSQLConnection, hasHistory: Bool = true, columnsMayBeMissing: Bool = false, snapshot: Bool = false
    ) throws -> [String: MigrationRecord] {
        let progressColumn = columnsMayBeMissing ? "to_jsonb(l) ->> 'progress'" : "progress"
        var statements = [
            "SELECT manager, level, app_version, baseline, \(progressColumn) FROM \(qualified(Self.levelsTable)) l"
        ]
        // The whole history, every time: a copy kept between reads could miss a row changed in
        // place by another program, and the step executor trusts this read. In `id` order; for
        // planning, sorted here: there the connection is often new, and an `ORDER BY` made the
        // server plan the primary key's index with cold caches, a third of the read's time (the
        // rows come in that order nearly always). A step's read, on a connection past its first,
        // leaves the order to the server, which costs it nothing then.
        if hasHistory {
            let labels = columnsMayBeMissing ? "j ->> 'name', j ->> 'fingerprint'" : "name, fingerprint"
            let from = columnsMayBeMissing
                ? "\(qualified(Self.historyTable)) h, LATERAL to_jsonb(h) j" : qualified(Self.historyTable)
            statements.append("""
                SELECT manager, version, extract(epoch FROM applied_at)::float8, duration_seconds, \(labels)\(snapshot ? ", id" : "")
                FROM \(from)\(snapshot ? "" : " ORDER BY id")
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
        var history = hasHistory ? results[offset + 1] : []
        // Read without `ORDER BY id`: the ids say the order.
        if snapshot { history = try Self.inIDOrder(history, idColumn: 6) }
        return try Self.decodeRecords(levels: results[offset], history: history, store: description)
    }

    /// History rows read without `ORDER BY`, in the order of the `id` in column `idColumn`:
    /// as they came, nearly always.
    static func inIDOrder(_ history: [PostgreSQLRow], idColumn: Int) throws -> [PostgreSQLRow] {
        let ids = try history.map { try $0[idColumn] as Int64 }
        guard zip(ids, ids.dropFirst()).contains(where: { $0 > $1 }) else { return history }
        return zip(ids, history).sorted { $0.0 < $1.0 }.map(\.1)
    }

    /// The records in rows of the levels table (`manager, level, app_version, baseline,
    /// progress`) and of the history table in `id` order (`manager, version, applied_at as
    /// epoch seconds, duration_seconds, name, fingerprint`), through the reader both SQL stores
    /// share: a store's own read, and a fleet's read of many schemas at once. Errors name
    /// `store`, the store's description.
    static func decodeRecords(
        levels: some Sequence<PostgreSQLRow>, history: some Sequence<PostgreSQLRow>, store: String
    ) throws -> [String: MigrationRecord] {
        var reader = SQLRecordReader(levelsTable: levelsTable, historyTable: historyTable, store: store)
        for row in levels {
            try reader.levels(
                manager: try row[0], level: text(row[1]), appVersion: text(row[2]),
                baseline: text(row[3]), progress: text(row[4]))
        }
        for (index, row) in history.enumerated() {
            let seconds: Double? = try row[2]
            try reader.history(
                of: try row[0], id: Int64(index), version: text(row[1]), appliedAt: seconds,
                duration: try row[3], name: try row[4], fingerprint: try row[5])
        }
        return reader.records()
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

    private static func text(_ value: PostgreSQLValue) -> SQLRecordText {
        switch value {
        case .null: return .null
        case .text(let text): return .text(text)
        default: return .other("\(value)")
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

extension PostgreSQLError {
    /// Whether the server said a table or a schema does not exist (`undefined_table`,
    /// `invalid_schema_name`): from the read of the records, that their tables were dropped.
    var saysATableOrSchemaIsMissing: Bool { sqlState == "42P01" || sqlState == "3F000" }
}
