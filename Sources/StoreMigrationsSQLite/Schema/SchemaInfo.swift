import StoreMigrations

/// A column of a table, as reported by ``Database/tableInfo(_:)``.
public struct ColumnInfo: Sendable, Hashable {
    /// The column's name.
    public let name: String
    /// The declared type as written (`"INTEGER"`, `"TEXT"`, `""` when none).
    public let type: String
    /// Whether the column is declared `NOT NULL`.
    public let isNotNull: Bool
    /// The default value's SQL as written (`"'none'"`, `"0"`, `"CURRENT_TIMESTAMP"`), or `nil`.
    public let defaultValueSQL: String?
    /// The column's position in the primary key, from 1; 0 when it is not part of it.
    public let primaryKeyPosition: Int
}

/// An index of a table, as reported by ``Database/indexes(on:)``.
public struct IndexInfo: Sendable, Hashable {
    /// Where an index comes from.
    public enum Origin: Sendable, Hashable {
        /// A `CREATE INDEX` statement.
        case createIndex
        /// A `UNIQUE` constraint of the table.
        case uniqueConstraint
        /// The table's `PRIMARY KEY` constraint.
        case primaryKeyConstraint
    }

    /// The index's name (SQLite names constraint indexes `sqlite_autoindex_…`).
    public let name: String
    /// The indexed columns, in order; expressions are left out.
    public let columns: [String]
    /// Whether the index rejects duplicate keys.
    public let isUnique: Bool
    /// Whether the index was created by a statement or by a constraint.
    public let origin: Origin
    /// Whether the index has a `WHERE` clause.
    public let isPartial: Bool
}

/// A foreign key of a table, as reported by ``Database/foreignKeys(of:)``.
public struct ForeignKeyInfo: Sendable, Hashable {
    /// The foreign key's id within its table, as in ``ForeignKeyViolation/foreignKeyID``.
    public let id: Int
    /// The table referred to.
    public let parentTable: String
    /// The columns of this table, in order.
    public let columns: [String]
    /// The columns of the parent table, in order; `nil` entries refer to its primary key.
    public let parentColumns: [String?]
    /// The `ON UPDATE` action: `"NO ACTION"`, `"CASCADE"`, `"SET NULL"`, `"SET DEFAULT"` or `"RESTRICT"`.
    public let onUpdate: String
    /// The `ON DELETE` action, with the same values as ``onUpdate``.
    public let onDelete: String
}

/// The declared type of a new column, which sets its affinity in SQLite.
///
/// ```swift
/// try db.addColumn("guid", type: .text, to: "event")
/// try db.addColumn("starts_at", type: "DATETIME", to: "event")
/// ```
public struct ColumnType: Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The type as written in SQL.
    public let sql: String

    /// A type written as `sql`, such as `"VARCHAR(40)"`.
    public init(_ sql: String) { self.sql = sql }
    /// A type written as the literal, such as `"DATETIME"`.
    public init(stringLiteral value: String) { self.sql = value }

    /// `INTEGER`.
    public static let integer = ColumnType("INTEGER")
    /// `REAL`.
    public static let real = ColumnType("REAL")
    /// `TEXT`.
    public static let text = ColumnType("TEXT")
    /// `BLOB`.
    public static let blob = ColumnType("BLOB")
    /// `NUMERIC`.
    public static let numeric = ColumnType("NUMERIC")

    public var description: String { sql }
}
