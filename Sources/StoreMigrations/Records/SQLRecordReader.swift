import Foundation

/// A value of a record table's text column as a driver read it, before it means anything.
package enum SQLRecordText: Sendable, Hashable {
    case null
    case text(String)
    /// A value of another type, by its description: an unreadable record, never an empty one.
    case other(String)
}

/// The one reader of ``SQLRecordTables``, shared by SQLite and PostgreSQL: each store walks its
/// driver's rows its own fastest way and hands them over here, which turns them into records and
/// names what does not parse.
///
/// History rows come in runs, one manager after another, and levels rows in any order around
/// them. A store that can compare a row's manager with ``historyManager`` in place (without
/// making a string of it) passes that string on for the rows of a run. ``records()`` then gives
/// every manager's record, decided by ``MigrationRecord/init(decoding:)``.
package struct SQLRecordReader {
    private let levelsTable: String
    private let historyTable: String
    private let store: String
    private var levels: [String: StoredRecord] = [:]
    private var histories: [String: [HistoryRow]] = [:]
    private var runManager: String?
    private var run: [HistoryRow] = []
    private var lastID = Int64.min
    private var isInIDOrder = true

    /// A reader of the tables `levelsTable` and `historyTable` (unqualified, as errors name them)
    /// of `store` (its description, for errors).
    package init(levelsTable: String, historyTable: String, store: String) {
        self.levelsTable = levelsTable
        self.historyTable = historyTable
        self.store = store
    }

    /// One manager's levels row.
    package mutating func levels(
        manager: String, level: SQLRecordText, appVersion: SQLRecordText, baseline: SQLRecordText, progress: SQLRecordText
    ) throws {
        levels[manager] = StoredRecord(
            level: try version(level, column: "level", table: levelsTable, of: manager),
            baseline: try version(baseline, column: "baseline", table: levelsTable, of: manager),
            appVersion: try version(appVersion, column: "app_version", table: levelsTable, of: manager),
            inProgress: try inProgress(progress, of: manager))
    }

    /// The manager of the last history row read.
    package var historyManager: String? { runManager }

    /// One history row of `manager`. `id` is the row's key, in insertion order: of two rows for
    /// one version, the first applied is kept, whatever order the rows came in. A row without a
    /// version stands for nothing.
    package mutating func history(
        of manager: String, id: Int64, version text: SQLRecordText, appliedAt seconds: Double?, duration: Double?,
        name: String?, fingerprint: String?
    ) throws {
        if manager != runManager {
            endRun()
            runManager = manager
        }
        guard let version = try version(text, column: "version", table: historyTable, of: manager) else { return }
        let migration = AppliedMigration(
            version: version, appliedAt: seconds.map(Date.init(timeIntervalSince1970:)), duration: duration, name: name,
            fingerprint: try StoredRecord.fingerprint(fingerprint, of: version, manager: manager, store: store, table: historyTable))
        isInIDOrder = isInIDOrder && id > lastID
        lastID = id
        run.append(HistoryRow(id: id, migration: migration))
    }

    /// Every manager's record, from its levels row, its history rows or both.
    package mutating func records() -> [String: MigrationRecord] {
        endRun()
        var records: [String: MigrationRecord] = [:]
        records.reserveCapacity(levels.count)
        for (manager, row) in levels {
            var stored = row
            if let history = histories.removeValue(forKey: manager) { stored.applied = applied(history) }
            records[manager] = MigrationRecord(decoding: stored)
        }
        for (manager, history) in histories {
            records[manager] = MigrationRecord(decoding: StoredRecord(applied: applied(history)))
        }
        return records
    }

    private mutating func endRun() {
        if let runManager, !run.isEmpty { histories[runManager, default: []].append(contentsOf: run) }
        run.removeAll(keepingCapacity: true)
    }

    private func applied(_ history: [HistoryRow]) -> [AppliedMigration] {
        (isInIDOrder ? history : history.sorted { $0.id < $1.id }).map(\.migration)
    }

    private func version(_ value: SQLRecordText, column: String, table: String, of manager: String) throws -> Version? {
        switch value {
        case .null:
            return nil
        case .text(let text):
            do {
                return try Version(parsing: text)
            } catch {
                throw MigrationError.unreadableState(manager: manager, store: store, reason: "its \(column) in table \(table) is \(error)")
            }
        case .other(let description):
            throw MigrationError.unreadableState(
                manager: manager, store: store, reason: "its \(column) in table \(table) is \(description), not text")
        }
    }

    private func inProgress(_ value: SQLRecordText, of manager: String) throws -> [StepProgress] {
        switch value {
        case .null: return []
        case .text(let text): return try StoredProgress.list(column: text, of: manager, store: store, table: levelsTable)
        case .other(let description):
            return try StoredProgress.list(column: nil, other: description, of: manager, store: store, table: levelsTable)
        }
    }

    /// A history row as read, with its key.
    private struct HistoryRow {
        let id: Int64
        let migration: AppliedMigration
    }
}
