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
    /// An expression that turns a parameter holding seconds since 1970 into a stored timestamp.
    package let timestamp: @Sendable (String) -> String
    /// The history's key column, assigned in insertion order.
    package let historyKey: String
    /// The history's timestamp column type.
    package let timestampType: String
    /// The history's duration column type.
    package let realType: String

    package init(
        placeholder: @escaping @Sendable (Int) -> String, timestamp: @escaping @Sendable (String) -> String,
        historyKey: String, timestampType: String, realType: String
    ) {
        self.placeholder = placeholder
        self.timestamp = timestamp
        self.historyKey = historyKey
        self.timestampType = timestampType
        self.realType = realType
    }
}

/// The two tables in which the SQL stores keep their managers' records, and the one writer both
/// SQLite and PostgreSQL use: the levels table (a row per manager: level, app version, baseline)
/// and the history table (a row per applied migration: when, how long, its name and fingerprint).
///
/// Reading stays with each store, which knows its driver's fastest way through the rows; what the
/// rows mean is ``MigrationRecord/init(decoding:)``'s to say, for both.
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

    /// The statements that create both tables where they are missing. A levels table made by a
    /// release before resumable migrations lacks `progress`, a history table made before names
    /// and fingerprints lacks ``historyLabelColumns``: each store adds them (SQLite cannot say
    /// `ADD COLUMN IF NOT EXISTS`).
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

    /// The history's columns added after its first release, both nullable `text`: a row written
    /// by an older release has neither, and reads as a migration without them.
    package static let historyLabelColumns = ["name", "fingerprint"]

    /// Writes what changed between `old` and `new`, in the caller's transaction: each changed
    /// manager's levels row (with its `level`, which older releases read) and the history rows
    /// of the versions that left or joined its applied set. Work grows with the managers that
    /// changed and their applied sets, walked once side by side (both are sorted), never with
    /// one scan of a set per version.
    package func write(
        _ new: [String: MigrationRecord], over old: [String: MigrationRecord], through connection: some SQLRecordConnection
    ) throws {
        let p = dialect.placeholder
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
            for migration in added {
                try connection.executeRecordStatement(
                    """
                    INSERT INTO \(history)(manager, version, applied_at, duration_seconds, name, fingerprint)
                    VALUES (\(p(1)), \(p(2)), \(dialect.timestamp(p(3))), \(p(4)), \(p(5)), \(p(6)))
                    """,
                    [
                        .text(manager), .text(migration.version.description),
                        .real((migration.appliedAt ?? Date()).timeIntervalSince1970), .real(migration.duration ?? 0),
                        migration.name.map { .text($0) } ?? .null, migration.fingerprint.map { .text($0.rawValue) } ?? .null,
                    ])
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

    /// The migrations of `old` whose version is not in `new`, those of `new` whose version is not
    /// in `old`, and those of `new` in both whose name or fingerprint changed (a repair): both
    /// lists ascend by version, so one walk side by side finds them.
    static func difference(
        from old: [AppliedMigration], to new: [AppliedMigration]
    ) -> (removed: [AppliedMigration], added: [AppliedMigration], relabelled: [AppliedMigration]) {
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
