#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import Foundation
import StoreMigrations
import StoreMigrationsSQLite
import StoreMigrationsTesting

/// Captures a `SQLiteStore` as one database file (SQLite's online backup of a consistent
/// snapshot, write-ahead log included) and compares its schema table by table, column by column.
///
/// ```swift
/// let tester = UpgradeTester(kinds: [.sqlite]) { location in … }
/// ```
///
/// The schema is compared as `Database.schema()` reads it (columns by name with type, `NOT NULL`
/// and default; each table's order of columns; primary key and unique constraints; foreign keys;
/// indexes), and views and triggers by their SQL, spaces normalized. The store's record tables
/// are compared as records, not as schema.
///
/// The order of columns matters to `SELECT *`, to `INSERT INTO note VALUES (…)` without a list
/// of columns and to rows read by position: a table that an upgrade rebuilt with its columns in
/// another order than a fresh install's differs, and the diff names it:
///
/// ```text
/// @@ library, upgraded from 1.2: table note, order of columns @@
/// - id, title, body, pinned
/// + id, pinned, title, body
/// ```
///
/// `ALTER TABLE … ADD COLUMN` puts a column last, so migrations that run in another order on an
/// upgrade than on a fresh install (a late migration, a branch on existing rows) can leave
/// columns in another order. An app that names its columns everywhere may leave the order out:
/// `UpgradeTester(kinds: [.sqlite(comparesColumnOrder: false)]) { … }`.
public struct SQLiteFixtureKind: StoreFixtureKind {
    public let name = "sqlite"

    /// Whether each table's order of columns is compared, not only its columns by name.
    public let comparesColumnOrder: Bool

    /// The kind; `comparesColumnOrder: false` compares columns by name only, whatever their order.
    public init(comparesColumnOrder: Bool = true) {
        self.comparesColumnOrder = comparesColumnOrder
    }

    public func accepts(_ store: any MigrationStore) -> Bool { store is SQLiteStore }

    public func capture(_ store: any MigrationStore, into folder: URL) throws -> Bool {
        let url = try database(store).url
        guard FileManager.default.fileExists(atPath: url.path) else { return false }
        try SQLiteBackup.copy(url, to: folder.appendingPathComponent(url.lastPathComponent), store: store.description)
        return true
    }

    public func restore(_ store: any MigrationStore, from folder: URL) throws {
        let url = try database(store).url
        let files = FileManager.default
        for suffix in ["-wal", "-shm", "-journal"] {
            let sibling = URL(fileURLWithPath: url.path + suffix)
            if files.fileExists(atPath: sibling.path) { try files.removeItem(at: sibling) }
        }
        let names = try files.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".") }
        guard names.count == 1 else {
            throw UpgradeTestingError(
                store: store.description,
                reason: .notAFixture(folder: folder.path, detail: "expected one database file, found \(names.sorted())"))
        }
        if files.fileExists(atPath: url.path) { try files.removeItem(at: url) }
        try files.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try files.copyItem(at: folder.appendingPathComponent(names[0]), to: url)
    }

    public func snapshot(of store: any MigrationStore) throws -> [SnapshotEntry] {
        try database(store).read { db in
            var entries: [SnapshotEntry] = []
            for table in try db.schema().tables {
                var constraints = ["primary key (" + table.primaryKey.joined(separator: ", ") + ")"]
                constraints += table.uniqueConstraints.map { "unique (" + $0.joined(separator: ", ") + ")" }
                entries.append(SnapshotEntry(.schema, "table \(table.name)", constraints.joined(separator: "; ")))
                if comparesColumnOrder {
                    let order = table.columns.map(\.name).joined(separator: ", ")
                    entries.append(SnapshotEntry(.schema, "table \(table.name), order of columns", order))
                }
                for column in table.columns.sorted(by: { $0.name < $1.name }) {
                    entries.append(SnapshotEntry(.schema, "table \(table.name), column \(column.name)", column.description))
                }
                for key in table.foreignKeys {
                    entries.append(SnapshotEntry(
                        .schema, "table \(table.name), foreign key (\(key.columns.joined(separator: ", ")))", key.description))
                }
                for index in table.indexes {
                    entries.append(SnapshotEntry(.schema, "index \(index.name)", "on \(table.name): \(index.description)"))
                }
            }
            for row in try db.rows("SELECT type, name, sql FROM sqlite_master WHERE type IN ('view', 'trigger') ORDER BY type, name") {
                let type: String = try row["type"], name: String = try row["name"], sql: String? = try row["sql"]
                let normalized = (sql ?? "").split(whereSeparator: \.isWhitespace).joined(separator: " ")
                entries.append(SnapshotEntry(.schema, "\(type) \(name)", normalized))
            }
            return entries
        }
    }

    /// Every row of every table but the record tables, named by its primary key (or, in a table
    /// without one, by its place among the rows in text order).
    public func contents(of store: any MigrationStore) throws -> [SnapshotEntry] {
        try database(store).read { db in
            var entries: [SnapshotEntry] = []
            for table in try db.schema().tables {
                let quoted = "\"" + table.name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
                let rows = try db.rows("SELECT * FROM \(quoted)").sorted { $0.description < $1.description }
                for (position, row) in rows.enumerated() {
                    let key = table.primaryKey.compactMap { column -> String? in
                        guard let index = row.columnNames.firstIndex(where: { $0.caseInsensitiveCompare(column) == .orderedSame }) else {
                            return nil
                        }
                        return "\(column) \(row.values[index])"
                    }
                    let name = key.isEmpty ? "\(position + 1)" : key.joined(separator: ", ")
                    entries.append(SnapshotEntry(.content, "table \(table.name), row \(name)", row.description))
                }
            }
            return entries
        }
    }

    private func database(_ store: any MigrationStore) throws -> SQLiteStore {
        guard let store = store as? SQLiteStore else {
            throw UpgradeTestingError(store: store.description, reason: .noKind(store: name))
        }
        return store
    }
}

extension StoreFixtureKind where Self == SQLiteFixtureKind {
    /// SQLite databases (`SQLiteStore`), each table's order of columns compared.
    public static var sqlite: SQLiteFixtureKind { SQLiteFixtureKind() }

    /// SQLite databases (`SQLiteStore`); `comparesColumnOrder: false` compares columns by name
    /// only, whatever their order.
    ///
    /// ```swift
    /// let tester = UpgradeTester(kinds: [.sqlite(comparesColumnOrder: false)]) { location in … }
    /// ```
    public static func sqlite(comparesColumnOrder: Bool) -> SQLiteFixtureKind {
        SQLiteFixtureKind(comparesColumnOrder: comparesColumnOrder)
    }
}
