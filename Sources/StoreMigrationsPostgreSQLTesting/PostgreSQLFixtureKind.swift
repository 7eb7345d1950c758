import Foundation
import StoreMigrations
import StoreMigrationsPostgreSQL
import StoreMigrationsTesting

/// Captures a `PostgreSQLStore`'s schema (its tables, data, record tables included, and the
/// objects listed in the dump) as `dump.json`, read through libpq; restores it into the schema
/// the location's store names, which must not exist yet (give each location its own with
/// ``/StoreMigrationsTesting/StoreLocation/suiteName(_:)``), and drops that schema when the test is done with it.
///
/// ```swift
/// let tester = UpgradeTester(kinds: [.postgreSQL]) { location in
///     let coordinator = MigrationCoordinator(appVersion: "2.0")
///     let orders = try coordinator.manager(
///         "orders", store: PostgreSQLStore(testServerURL, schema: location.suiteName("orders")))
///     …
/// }
/// ```
///
/// The schema is compared as the catalog describes it: columns by name with type, `NOT NULL`,
/// default and identity, and each table's order of columns (which `SELECT *` and `INSERT`
/// without a column list depend on; `ADD COLUMN` always appends, so an upgrade and a fresh
/// install differ only where a migration rebuilt a table, and there is no option to ignore it);
/// constraints by `pg_get_constraintdef`; indexes by `pg_get_indexdef`;
/// views by `pg_get_viewdef`; custom types by their definition; functions and procedures by
/// `pg_get_functiondef`; triggers by `pg_get_triggerdef`; sequences by their definition and
/// the column that owns one; privileges by role; the store's record tables as records. What
/// the dump covers, and what it leaves out, is listed in the product's documentation.
///
/// A fixture that gives privileges to a role restores only on a server that has the role:
/// restoring it elsewhere throws ``/StoreMigrationsTesting/UpgradeTestingError`` naming the role.
public struct PostgreSQLFixtureKind: StoreFixtureKind {
    public let name = "postgresql"
    static let fileName = "dump.json"
    private static let recordTables = ["store_migrations_levels", "store_migrations_history"]

    /// The kind.
    public init() {}

    public func accepts(_ store: any MigrationStore) -> Bool { store is PostgreSQLStore }

    public func capture(_ store: any MigrationStore, into folder: URL) throws -> Bool {
        guard let dump = try dump(of: postgreSQL(store)) else { return false }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(dump).write(to: folder.appendingPathComponent(Self.fileName), options: .atomic)
        return true
    }

    public func restore(_ store: any MigrationStore, from folder: URL) throws {
        let store = try postgreSQL(store)
        let dump: PostgreSQLDump
        do {
            dump = try JSONDecoder().decode(PostgreSQLDump.self, from: Data(contentsOf: folder.appendingPathComponent(Self.fileName)))
        } catch {
            throw UpgradeTestingError(store: store.description, reason: .notAFixture(folder: folder.path, detail: "\(Self.fileName): \(error)"))
        }
        try store.withSession { db in
            // Before anything is written, so that a missing role leaves no schema half-made.
            for role in dump.roles where try db.scalar("SELECT count(*) FROM pg_roles WHERE rolname = $1", arguments: [.text(role)], as: Int.self) == 0 {
                throw UpgradeTestingError(store: store.description, reason: .missingRole(role: role))
            }
            try db.execute("BEGIN")
            do {
                try dump.restore(schema: store.schema, on: db)
                try db.execute("COMMIT")
            } catch {
                try? db.execute("ROLLBACK")
                throw UpgradeTestingError(store: store.description, reason: .restoreFailed(detail: "\(error)"))
            }
        }
    }

    public func snapshot(of store: any MigrationStore) throws -> [SnapshotEntry] {
        let store = try postgreSQL(store)
        return try store.read { db in
            guard try exists(store.schema, on: db) else { return [] }
            try db.execute("SET LOCAL search_path TO \(PostgreSQLConnection.quoted(store.schema))")
            let schema = PostgreSQLValue.text(store.schema)
            var entries: [SnapshotEntry] = []
            for row in try db.rows(
                """
                SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.attidentity::text,
                    pg_get_expr(d.adbin, d.adrelid)
                FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
                WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') ORDER BY c.relname, a.attname
                """, arguments: [schema])
            {
                let table: String = try row[0]
                guard !Self.recordTables.contains(table) else { continue }
                var definition = "\(try row[2] as String)"
                if try row[3] as Bool { definition += " NOT NULL" }
                switch try row[4] as String {
                case "a": definition += " GENERATED ALWAYS AS IDENTITY"
                case "d": definition += " GENERATED BY DEFAULT AS IDENTITY"
                default: if let expression = try row[5] as String? { definition += " DEFAULT \(expression)" }
                }
                entries.append(SnapshotEntry(.schema, "table \(table), column \(try row[1] as String)", definition))
            }
            // As SQLite's kind: `SELECT *`, `INSERT … VALUES` without columns and `COPY` read
            // columns by position, so a table rebuilt in another order than a fresh install's differs.
            for row in try db.rows(
                """
                SELECT c.relname, string_agg(a.attname, ', ' ORDER BY a.attnum)
                FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') GROUP BY c.relname ORDER BY c.relname
                """, arguments: [schema])
            where !Self.recordTables.contains(try row[0] as String) {
                entries.append(SnapshotEntry(.schema, "table \(try row[0] as String), order of columns", try row[1]))
            }
            for row in try db.rows(
                """
                SELECT c.relname, k.conname, pg_get_constraintdef(k.oid)
                FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = $1 ORDER BY c.relname, k.conname
                """, arguments: [schema])
            where !Self.recordTables.contains(try row[0] as String) {
                entries.append(SnapshotEntry(.schema, "table \(try row[0] as String), constraint \(try row[1] as String)", try row[2]))
            }
            for row in try db.rows(
                """
                SELECT c.relname, t.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i
                JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid
                JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = $1 ORDER BY c.relname
                """, arguments: [schema])
            where !Self.recordTables.contains(try row[1] as String) {
                let definition = (try row[2] as String).replacingOccurrences(of: "\(PostgreSQLConnection.quoted(store.schema)).", with: "")
                    .replacingOccurrences(of: "\(store.schema).", with: "")
                entries.append(SnapshotEntry(.schema, "index \(try row[0] as String)", definition))
            }
            for row in try db.rows(
                """
                SELECT c.relname, pg_get_viewdef(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = $1 AND c.relkind = 'v' ORDER BY c.relname
                """, arguments: [schema])
            {
                let definition = (try row[1] as String).split(whereSeparator: \.isWhitespace).joined(separator: " ")
                entries.append(SnapshotEntry(.schema, "view \(try row[0] as String)", definition))
            }
            for definition in try PostgreSQLCatalog.types(in: store.schema, on: db) {
                entries.append(SnapshotEntry(.schema, definition.name, definition.create))
            }
            for definition in try PostgreSQLCatalog.functions(in: store.schema, on: db) {
                let create = PostgreSQLCatalog.retargeted(definition.create, from: store.schema, to: "(the store's schema)")
                entries.append(SnapshotEntry(.schema, definition.name, create))
            }
            for definition in try PostgreSQLCatalog.triggers(in: store.schema, on: db) {
                entries.append(SnapshotEntry(.schema, definition.name, definition.create))
            }
            for (definition, owner) in try PostgreSQLCatalog.sequences(in: store.schema, on: db)
            where !Self.recordTables.contains(where: { owner?.hasPrefix($0 + ".") ?? false }) {
                entries.append(SnapshotEntry(.schema, "sequence \(definition.name)", definition.create + (owner.map { " OWNED BY \($0)" } ?? "")))
            }
            for privileges in try PostgreSQLCatalog.privileges(in: store.schema, on: db) {
                entries.append(SnapshotEntry(.schema, "privileges on \(privileges.object ?? "the schema")", privileges.summary))
            }
            return entries
        }
    }

    /// Every row of every table but the record tables, as the dump reads it (`row_to_json`),
    /// named by its place among the table's rows in text order.
    public func contents(of store: any MigrationStore) throws -> [SnapshotEntry] {
        return (try dump(of: postgreSQL(store))?.tables ?? []).filter { !Self.recordTables.contains($0.name) }.flatMap { table in
            table.rows.sorted().enumerated().map { position, row in
                SnapshotEntry(.content, "table \(table.name), row \(position + 1)", row)
            }
        }
    }

    public func discard(_ store: any MigrationStore) throws {
        let store = try postgreSQL(store)
        try store.withSession { db in try db.execute("DROP SCHEMA IF EXISTS \(PostgreSQLConnection.quoted(store.schema)) CASCADE") }
    }

    /// The store's schema, read in one snapshot; `nil` when the schema does not exist.
    private func dump(of store: PostgreSQLStore) throws -> PostgreSQLDump? {
        try store.withSession { db -> PostgreSQLDump? in
            try db.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            defer { try? db.execute("ROLLBACK") }
            guard try exists(store.schema, on: db) else { return nil }
            return try PostgreSQLDump.read(schema: store.schema, on: db)
        }
    }

    private func exists(_ schema: String, on db: PostgreSQLConnection) throws -> Bool {
        try db.scalar("SELECT count(*) FROM pg_namespace WHERE nspname = $1", arguments: [.text(schema)], as: Int.self) == 1
    }

    private func postgreSQL(_ store: any MigrationStore) throws -> PostgreSQLStore {
        guard let store = store as? PostgreSQLStore else {
            throw UpgradeTestingError(store: store.description, reason: .noKind(store: name))
        }
        return store
    }
}

extension StoreFixtureKind where Self == PostgreSQLFixtureKind {
    /// PostgreSQL schemas (`PostgreSQLStore`).
    public static var postgreSQL: PostgreSQLFixtureKind { PostgreSQLFixtureKind() }
}
