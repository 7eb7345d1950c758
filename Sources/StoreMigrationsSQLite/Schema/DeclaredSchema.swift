import Foundation
import StoreMigrations

/// The tables a version of an app expects in its SQLite database: their columns (type,
/// nullability, default), primary keys, unique constraints, foreign keys and indexes, and for
/// each table and column the name it had in the previous version, if it was renamed (Core Data's
/// *renaming identifier*).
///
/// Declare each version's schema once, then let ``Database/migrateSchema(to:dataLoss:mappings:)``
/// bring the database to it:
///
/// ```swift
/// let notesV2: DeclaredSchema = [
///     .table("nota", primaryKey: ["id"], columns: [
///         .column("id", .integer),
///         .column("texto", .text, notNull: true, default: ""),
///         .column("momento", .text, renamedFrom: "fecha"),   // keeps the values of `fecha`
///         .column("guid", .text),                           // new, NULL in existing rows
///     ], indexes: [
///         .index("nota_on_momento", on: ["momento"]),
///     ]),
/// ]
/// library.register("2.0") { db in try db.migrateSchema(to: notesV2) }
/// ```
///
/// The declaration is the whole schema: tables it does not list are dropped, and so are columns,
/// indexes and constraints. ``Database/schema()`` reads a database's schema into the same value,
/// and `description` writes a schema as `CREATE` statements.
///
/// Names compare case-insensitively, as in SQL. Column order, and the order of indexes and
/// constraints, do not count as differences.
public struct DeclaredSchema: Sendable, Hashable, Codable, ExpressibleByArrayLiteral, CustomStringConvertible {
    /// The tables, in the order they are created.
    public let tables: [Table]

    /// A schema of `tables`.
    public init(_ tables: [Table]) {
        self.tables = tables
    }

    /// A schema of the tables listed.
    public init(arrayLiteral tables: Table...) {
        self.init(tables)
    }

    /// The table named `name` (compared case-insensitively), if the schema has one.
    public func table(named name: String) -> Table? {
        tables.first { $0.name.isSameSQLName(as: name) }
    }

    /// The schema as the SQL statements that create it.
    public var description: String {
        var sql = SQLText()
        writeSQL(into: &sql)
        return sql.text
    }
}

extension DeclaredSchema {
    /// A table: its columns, keys, constraints and indexes.
    public struct Table: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The table's name.
        public let name: String
        /// The name the table had in the previous version of the schema, if it was renamed.
        public let renamedFrom: String?
        /// The columns of the primary key, in key order; empty when the table is keyed by its
        /// rowid alone. A single `INTEGER` column is the rowid under another name.
        public let primaryKey: [String]
        /// The columns, in the order a new table gets them.
        public let columns: [Column]
        /// The `UNIQUE` constraints, each a list of columns.
        public let uniqueConstraints: [[String]]
        /// The references to other tables.
        public let foreignKeys: [ForeignKey]
        /// The indexes created with `CREATE INDEX`.
        public let indexes: [Index]

        /// Declares a table.
        ///
        /// ```swift
        /// .table("nota_categoria", primaryKey: ["nota_id", "categoria_id"], columns: [
        ///     .column("nota_id", .integer, notNull: true),
        ///     .column("categoria_id", .integer, notNull: true),
        /// ], foreignKeys: [
        ///     .foreignKey(["nota_id"], references: "nota", columns: ["id"], onDelete: .cascade),
        ///     .foreignKey(["categoria_id"], references: "categoria", columns: ["id"], onDelete: .cascade),
        /// ], indexes: [
        ///     .index("nota_categoria_on_categoria", on: ["categoria_id"]),
        /// ])
        /// ```
        ///
        /// - Parameters:
        ///   - name: The table's name.
        ///   - renamedFrom: The table's name in the previous version, if it was renamed: its rows
        ///     are kept. Used only while the database has no table named `name`.
        ///   - primaryKey: The primary key's columns; `["id"]` with `id` an `INTEGER` column makes
        ///     `id` the rowid.
        ///   - columns: The columns.
        ///   - unique: `UNIQUE` constraints, each a list of columns.
        ///   - foreignKeys: References to other tables of the schema.
        ///   - indexes: Indexes on the table.
        public static func table(
            _ name: String, renamedFrom: String? = nil, primaryKey: [String] = [], columns: [Column],
            unique: [[String]] = [], foreignKeys: [ForeignKey] = [], indexes: [Index] = []
        ) -> Table {
            Table(
                name: name, renamedFrom: renamedFrom, primaryKey: primaryKey, columns: columns,
                uniqueConstraints: unique, foreignKeys: foreignKeys, indexes: indexes)
        }

        /// The column named `name` (compared case-insensitively), if the table has one.
        public func column(named name: String) -> Column? {
            columns.first { $0.name.isSameSQLName(as: name) }
        }

        /// The table as its `CREATE TABLE` statement, followed by its `CREATE INDEX` statements.
        public var description: String {
            var sql = SQLText()
            writeSQL(into: &sql)
            return sql.text
        }
    }
}

extension String {
    /// Whether two SQL names are the same name, which SQL compares without regard to case.
    func isSameSQLName(as other: String) -> Bool {
        // A declaration's check compares every name it lists with the table's columns: ASCII
        // names, nearly all of them, are compared here, where Foundation's comparison, kept for
        // the others, bridged both texts for each pair.
        if let same = Self.isSameASCIIName(utf8, other.utf8) { return same }
        return caseInsensitiveCompare(other) == .orderedSame
    }

    /// Whether `left` and `right` are equal with ASCII letters folded to one case; `nil` when
    /// either has a byte outside ASCII, for which case is Unicode's to decide.
    private static func isSameASCIIName(_ left: String.UTF8View, _ right: String.UTF8View) -> Bool? {
        guard left.count == right.count else {
            return left.allSatisfy { $0 < 0x80 } && right.allSatisfy { $0 < 0x80 } ? false : nil
        }
        var same = true
        for (a, b) in zip(left, right) {
            guard a < 0x80, b < 0x80 else { return nil }
            if a != b, a | 0x20 != b | 0x20 || !(UInt8(ascii: "a")...UInt8(ascii: "z")).contains(a | 0x20) { same = false }
        }
        return same
    }
}
