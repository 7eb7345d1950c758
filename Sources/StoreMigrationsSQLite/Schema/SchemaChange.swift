import StoreMigrations

/// One operation of a schema migration, as ``Database/schemaChanges(to:mappings:)`` lists them
/// and ``Database/migrateSchema(to:dataLoss:mappings:)`` applies them, in order.
///
/// ```swift
/// for change in try db.schemaChanges(to: notesV2) { print(change) }
/// // rename column nota.fecha to momento
/// // add column nota: "guid" TEXT
/// // create index nota_on_momento (momento) on nota
/// ```
///
/// `ALTER TABLE` makes the changes it can; the others rebuild their table
/// (``rebuildTable(_:reasons:)``), once for all of that table's changes, following SQLite's
/// documented procedure.
public enum SchemaChange: Sendable, Hashable, Codable, CustomStringConvertible {
    /// `DROP INDEX`: an index the declaration removes or changes.
    case dropIndex(String, table: String)
    /// `ALTER TABLE … RENAME TO`, keeping the rows; references from other tables follow.
    case renameTable(String, to: String)
    /// `ALTER TABLE … RENAME COLUMN`, keeping the values; indexes and references follow.
    case renameColumn(String, to: String, table: String)
    /// `ALTER TABLE … DROP COLUMN`.
    case dropColumn(String, table: String)
    /// `ALTER TABLE … ADD COLUMN`; existing rows get the column's default.
    case addColumn(DeclaredSchema.Column, table: String)
    /// The table rebuilt to its declaration, rows, indexes and triggers kept: for changes
    /// `ALTER TABLE` cannot make.
    case rebuildTable(DeclaredSchema.Table, reasons: [RebuildReason])
    /// `CREATE TABLE`.
    case createTable(DeclaredSchema.Table)
    /// `DROP TABLE`.
    case dropTable(String)
    /// The rows of a table streamed through its ``EntityMapping`` into the declared tables. The
    /// table is set aside under a temporary name before the other changes, and dropped once its
    /// rows are mapped.
    case mapRows(from: String)
    /// `CREATE INDEX`, after the rows are in place.
    case createIndex(DeclaredSchema.Index, table: String)

    /// Why a table is rebuilt.
    public enum RebuildReason: Sendable, Hashable, Codable, CustomStringConvertible {
        /// A column `ALTER TABLE` cannot add: `NOT NULL` without a default, or with a default
        /// that is an expression.
        case addColumn(DeclaredSchema.Column)
        /// A column that goes with the rebuild.
        case dropColumn(String)
        /// A column whose type, nullability or default changes. A column that becomes
        /// `NOT NULL` has its `NULL`s replaced by its default.
        case alterColumn(from: DeclaredSchema.Column, to: DeclaredSchema.Column)
        /// The primary key changes (only in a table without rows).
        case changePrimaryKey(from: [String], to: [String])
        /// A `UNIQUE` constraint on these columns is added (the copy fails if rows repeat).
        case addUnique([String])
        /// The `UNIQUE` constraint on these columns goes.
        case dropUnique([String])
        /// A foreign key is added (the store's check fails if rows point nowhere).
        case addForeignKey(DeclaredSchema.ForeignKey)
        /// A foreign key goes.
        case dropForeignKey(DeclaredSchema.ForeignKey)

        public var description: String {
            switch self {
            case let .addColumn(column): return "add column \(column)"
            case let .dropColumn(column): return "drop column \(column)"
            case let .alterColumn(from, to):
                let nulls = to.isNotNull && !from.isNotNull
                    ? to.defaultValue.map { " (NULLs become \($0))" } ?? "" : ""
                return "change column \(from) to \(to)\(nulls)"
            case let .changePrimaryKey(from, to):
                return "change the primary key from (\(from.joined(separator: ", "))) to (\(to.joined(separator: ", ")))"
            case let .addUnique(columns): return "add unique (\(columns.joined(separator: ", ")))"
            case let .dropUnique(columns): return "drop unique (\(columns.joined(separator: ", ")))"
            case let .addForeignKey(key): return "add \(key)"
            case let .dropForeignKey(key): return "drop \(key)"
            }
        }
    }

    public var description: String {
        switch self {
        case let .dropIndex(index, table): return "drop index \(index) on \(table)"
        case let .renameTable(table, newName): return "rename table \(table) to \(newName)"
        case let .renameColumn(column, newName, table): return "rename column \(table).\(column) to \(newName)"
        case let .dropColumn(column, table): return "drop column \(table).\(column)"
        case let .addColumn(column, table): return "add column \(table): \(column)"
        case let .rebuildTable(table, reasons):
            return "rebuild table \(table.name): " + reasons.map(\.description).joined(separator: "; ")
        case let .createTable(table): return "create table \(table.name)"
        case let .dropTable(table): return "drop table \(table)"
        case let .mapRows(table): return "map the rows of \(table) through its entity mapping, then drop it"
        case let .createIndex(index, table): return "create \(index) on \(table)"
        }
    }
}
