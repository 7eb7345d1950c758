import Foundation

/// A value bound to a statement of ``SQLRecordTables``: the few kinds the record tables hold.
package enum SQLRecordValue: Sendable, Hashable {
    case text(String)
    case real(Double)
    case null

    init(_ version: Version?) {
        self = version.map { .text($0.description) } ?? .null
    }
}

/// A connection the record tables are written through: a SQLite `Database`, a PostgreSQL
/// connection. Statements run in the caller's transaction.
package protocol SQLRecordConnection {
    /// Runs one statement with `arguments` bound to its placeholders, in order.
    func executeRecordStatement(_ sql: String, _ arguments: [SQLRecordValue]) throws
}

/// What differs between the SQL databases that keep records: how a statement names its
/// parameters and turns a Unix time into the stored timestamp, and the column types.
package struct SQLRecordDialect: Sendable {
    /// The placeholder of the `position`th parameter, counted from 1 (`?`, `$1`).
    package let placeholder: @Sendable (Int) -> String
    /// An expression that turns the parameter bound by ``timestampArgument`` into a stored
    /// timestamp.
    package let timestamp: @Sendable (String) -> String
    /// The argument bound for a timestamp of seconds since 1970: the seconds themselves by
    /// default, or the stored timestamp already formatted, for a dialect whose ``timestamp``
    /// takes the parameter as it is.
    package let timestampArgument: @Sendable (Double) -> SQLRecordValue
    /// The history's key column, assigned in insertion order.
    package let historyKey: String
    /// The history's timestamp column type.
    package let timestampType: String
    /// The history's duration column type.
    package let realType: String
    /// A query whose column `name` lists the columns of a table, given as statements write its
    /// name; no rows for a table that does not exist.
    package let columnNames: @Sendable (String) -> String
    /// Whether `ALTER TABLE … ADD COLUMN IF NOT EXISTS` is understood: two processes adding a
    /// column at once then both succeed.
    package let addsColumnsIfNotExists: Bool

    package init(
        placeholder: @escaping @Sendable (Int) -> String, timestamp: @escaping @Sendable (String) -> String,
        timestampArgument: @escaping @Sendable (Double) -> SQLRecordValue = { .real($0) }, historyKey: String, timestampType: String, realType: String, columnNames: @escaping @Sendable (String) -> String,
        addsColumnsIfNotExists: Bool
    ) {
        self.placeholder = placeholder
        self.timestamp = timestamp
        self.timestampArgument = timestampArgument
        self.historyKey = historyKey
        self.timestampType = timestampType
        self.realType = realType
        self.columnNames = columnNames
        self.addsColumnsIfNotExists = addsColumnsIfNotExists
    }
}

/// The two tables in which the SQL stores keep their managers' records, and the one writer both
/// SQLite and PostgreSQL use: the levels table (a row per manager: level, app version, baseline)
/// and the history table (a row per applied migration: when, how long, its name and fingerprint).
///
/// Each store walks the rows its driver's fastest way and hands them to ``SQLRecordReader``;
/// what the rows mean is ``MigrationRecord/init(decoding:)``'s to say, for both.
package struct SQLRecordTables: Sendable {
    /// The levels table's name as statements write it (quoted and qualified where needed).
    package let levels: String
    /// The history table's name as statements write it.
    package let history: String
    package let dialect: SQLRecordDialect

    package init(levels: String, history: String, dialect: SQLRecordDialect) {
        self.levels = levels
        self.history = history
        self.dialect = dialect
    }

    /// The statements that create both tables where they are missing. Tables made by an earlier
    /// release may lack columns this one writes: ``upgradeStatements(present:)`` adds them.
    package var createStatements: [String] {
        [
            """
            CREATE TABLE IF NOT EXISTS \(levels)(
                manager text PRIMARY KEY NOT NULL, level text, app_version text, baseline text, progress text)
            """,
            """
            CREATE TABLE IF NOT EXISTS \(history)(
                id \(dialect.historyKey), manager text NOT NULL, version text NOT NULL,
                applied_at \(dialect.timestampType) NOT NULL, duration_seconds \(dialect.realType) NOT NULL,
                name text, fingerprint text)
            """,
        ]
    }

    /// The columns added to the record tables after their first release, as
    /// ``presentColumnsQuery`` names them.
    package enum LaterColumn: String, CaseIterable, Sendable {
        /// Records before sets kept only a level.
        case baseline = "levels.baseline"
        /// Records before resumable migrations kept no progress.
        case progress = "levels.progress"
        /// History before names and fingerprints kept neither.
        case name = "history.name"
        case fingerprint = "history.fingerprint"

        /// Whether the column is the levels table's (else the history's).
        var isInLevels: Bool { rawValue.hasPrefix("levels.") }
        /// The column's name in its table.
        var column: Substring { rawValue.drop { $0 != "." }.dropFirst() }
    }

    /// A query whose rows name the ``LaterColumn``s both tables have, one row each, in its first
    /// column.
    package var presentColumnsQuery: String {
        func names(_ table: String, _ prefix: String, inLevels: Bool) -> String {
            let wanted = LaterColumn.allCases.filter { $0.isInLevels == inLevels }.map { "'\($0.column)'" }
            return "SELECT '\(prefix).' || name FROM (\(dialect.columnNames(table))) AS c "
                + "WHERE name IN (\(wanted.joined(separator: ", ")))"
        }
        return names(levels, "levels", inLevels: true) + " UNION ALL " + names(history, "history", inLevels: false)
    }

    /// The statements that give tables written by an earlier release the columns this one
    /// writes, given the ``LaterColumn``s they have (`present`). A levels table without
    /// `baseline` was written before records held sets: each manager's level becomes its
    /// baseline mark (everything at or below it was applied). Progress, names and fingerprints
    /// added to older rows are empty: a history row without them reads as a migration recorded
    /// before releases kept them.
    package func upgradeStatements(present: Set<LaterColumn>) -> [String] {
        let ifNotExists = dialect.addsColumnsIfNotExists ? "IF NOT EXISTS " : ""
        var statements: [String] = []
        for column in LaterColumn.allCases where !present.contains(column) {
            statements.append("ALTER TABLE \(column.isInLevels ? levels : history) ADD COLUMN \(ifNotExists)\(column.column) text")
            if column == .baseline { statements.append("UPDATE \(levels) SET baseline = level") }
        }
        return statements
    }

    /// Writes what changed between `old` and `new`, in the caller's transaction: each changed
    /// manager's levels row (with its `level`, which older releases read) and the history rows
    /// of the versions that left or joined its applied set. Work grows with the managers that
    /// changed and their applied sets, walked once side by side (both are sorted), never with
    /// one scan of a set per version.
    package func write(
        _ new: [String: MigrationRecord], over old: [String: MigrationRecord], through connection: some SQLRecordConnection
    ) throws {
        let p = dialect.placeholder
        // Each text written once for all the rows: a squash or a creation from the declared
        // schema adds hundreds with it.
        var insertHistory: [Int: String] = [:]
        // The rows one step adds share its time: its timestamp is made once, not once a row.
        let now = Date()
        var lastTimestamp: (seconds: Double, argument: SQLRecordValue)?
        func timestamp(_ date: Date?) -> SQLRecordValue {
            let seconds = (date ?? now).timeIntervalSince1970
            if let lastTimestamp, lastTimestamp.seconds == seconds { return lastTimestamp.argument }
            let argument = dialect.timestampArgument(seconds)
            lastTimestamp = (seconds, argument)
            return argument
        }
        for manager in old.keys where new[manager] == nil {
            try connection.executeRecordStatement("DELETE FROM \(levels) WHERE manager = \(p(1))", [.text(manager)])
            try connection.executeRecordStatement("DELETE FROM \(history) WHERE manager = \(p(1))", [.text(manager)])
        }
        for (manager, record) in new {
            let previous = old[manager] ?? MigrationRecord()
            guard previous != record else { continue }
            try connection.executeRecordStatement(
                """
                INSERT INTO \(levels)(manager, level, app_version, baseline, progress)
                VALUES (\(p(1)), \(p(2)), \(p(3)), \(p(4)), \(p(5)))
                ON CONFLICT (manager) DO UPDATE SET level = excluded.level, app_version = excluded.app_version,
                    baseline = excluded.baseline, progress = excluded.progress
                """,
                [
                    .text(manager), SQLRecordValue(record.level), SQLRecordValue(record.appVersion),
                    SQLRecordValue(record.baseline), StoredProgress.json(record.inProgress).map { .text($0) } ?? .null,
                ])
            let (removed, added, relabelled) = Self.difference(from: previous.applied, to: record.applied)
            for migration in removed {
                try connection.executeRecordStatement(
                    "DELETE FROM \(history) WHERE manager = \(p(1)) AND version = \(p(2))",
                    [.text(manager), .text(migration.version.description)])
            }
            // Several rows a statement, in runs of a power of two of them: a statement run costs
            // SQLite (and PostgreSQL a round trip) more than a row, and the few sizes are each
            // compiled once. One array of arguments for all the runs, refilled in place: the
            // connection has let go of it when each run returns.
            var rows: [SQLRecordValue] = []
            rows.reserveCapacity(Self.columnsPerHistoryRow * min(added.count, Self.historyRowsPerInsert))
            var start = 0
            while start < added.count {
                let count = Self.historyRowsPerInsert(remaining: added.count - start)
                rows.removeAll(keepingCapacity: true)
                for migration in added[start..<(start + count)] {
                    rows.append(.text(manager))
                    rows.append(.text(migration.version.description))
                    rows.append(timestamp(migration.appliedAt))
                    rows.append(.real(migration.duration ?? 0))
                    rows.append(migration.name.map { .text($0) } ?? .null)
                    rows.append(migration.fingerprint.map { .text($0.rawValue) } ?? .null)
                }
                let insert = insertHistory[count] ?? insertHistoryStatement(rows: count)
                insertHistory[count] = insert
                try connection.executeRecordStatement(insert, rows)
                start += count
            }
            for migration in relabelled {
                try connection.executeRecordStatement(
                    "UPDATE \(history) SET name = \(p(1)), fingerprint = \(p(2)) WHERE manager = \(p(3)) AND version = \(p(4))",
                    [
                        migration.name.map { .text($0) } ?? .null, migration.fingerprint.map { .text($0.rawValue) } ?? .null,
                        .text(manager), .text(migration.version.description),
                    ])
            }
        }
    }

    /// The history's columns a row binds, and the most rows one `INSERT` writes. SQLite compiles
    /// each row of a `VALUES` list into code of its own, so the longest statement costs more to
    /// compile than its fewer runs save past 16 rows (Benchmarks/BENCHMARKS.md); 16 rows of 6
    /// parameters stay far below SQLite's and PostgreSQL's limits on parameters.
    static let columnsPerHistoryRow = 6
    static let historyRowsPerInsert = 16

    /// How many of `remaining` rows the next `INSERT` writes: the largest power of two that fits,
    /// at most ``historyRowsPerInsert``.
    static func historyRowsPerInsert(remaining: Int) -> Int {
        var count = historyRowsPerInsert
        while count > remaining { count /= 2 }
        return count
    }

    /// The `INSERT` of `rows` history rows, their parameters numbered on from the first row's.
    func insertHistoryStatement(rows: Int) -> String {
        let p = dialect.placeholder
        let values = (0..<rows).map { row in
            let first = row * Self.columnsPerHistoryRow
            return "(\(p(first + 1)), \(p(first + 2)), \(dialect.timestamp(p(first + 3))), \(p(first + 4)), "
                + "\(p(first + 5)), \(p(first + 6)))"
        }
        return "INSERT INTO \(history)(manager, version, applied_at, duration_seconds, name, fingerprint)\nVALUES "
            + values.joined(separator: ", ")
    }

    /// The migrations of `old` whose version is not in `new`, those of `new` whose version is not
    /// in `old`, and those of `new` in both whose name or fingerprint changed (a repair): both
    /// lists ascend by version, so one walk side by side finds them.
    static func difference(
        from old: [AppliedMigration], to new: [AppliedMigration]
    ) -> (removed: [AppliedMigration], added: [AppliedMigration], relabelled: [AppliedMigration]) {
        // A new store's whole history, hundreds of migrations after a squash or a creation from
        // the declared schema: shared, not copied one by one.
        if old.isEmpty { return ([], new, []) }
        var removed: [AppliedMigration] = [], added: [AppliedMigration] = [], relabelled: [AppliedMigration] = []
        var i = 0, j = 0
        while i < old.count || j < new.count {
            if j == new.count || (i < old.count && old[i].version < new[j].version) {
                removed.append(old[i])
                i += 1
            } else if i == old.count || new[j].version < old[i].version {
                added.append(new[j])
                j += 1
            } else {
                if old[i].name != new[j].name || old[i].fingerprint != new[j].fingerprint { relabelled.append(new[j]) }
                i += 1
                j += 1
            }
        }
        return (removed, added, relabelled)
    }
}
