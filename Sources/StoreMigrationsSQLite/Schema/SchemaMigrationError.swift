import Foundation
import StoreMigrations

/// Why ``Database/migrateSchema(to:dataLoss:mappings:)`` or ``Database/schemaChanges(to:mappings:)``
/// refused a declared schema. Nothing was changed when one is thrown.
///
/// ```swift
/// do {
///     try db.migrateSchema(to: notesV2)
/// } catch let error as SchemaMigrationError {
///     print(error)   // "Migrating /…/notes.sqlite to the declared schema would drop data: …"
/// }
/// ```
public enum SchemaMigrationError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// The declaration contradicts itself: a name used twice, a key, index or constraint on a
    /// column the table does not declare, a foreign key to a table the schema does not declare,
    /// or a mapping from a table the database does not have.
    case invalidDeclaration(problems: [Problem], database: String)
    /// The database differs from the declaration in ways a lightweight migration cannot bridge:
    /// a column's type changes while it holds values, a column becomes `NOT NULL` without a
    /// default while it holds `NULL`s, a primary key changes in a table with rows, or a column
    /// or table is split (two declarations name the same renaming identifier).
    case needsMappedMigration(problems: [Problem], database: String)
    /// Tables or columns that hold data would be dropped, and the data-loss policy does not
    /// allow it.
    case wouldLoseData(problems: [Problem], database: String)
    /// A change needs the table rebuilt from its declaration, which would lose parts of the
    /// table the declaration cannot describe (the `features`: `CHECK`, `COLLATE`,
    /// `AUTOINCREMENT`, `WITHOUT ROWID`, generated columns, …).
    case cannotRebuild(table: String, features: [String], database: String)

    /// One thing wrong, in one table and possibly one column.
    public struct Problem: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The table concerned, by the name the database or the declaration gives it.
        public let table: String
        /// The column concerned, if the problem is about one.
        public let column: String?
        /// What is wrong, and what would make it right.
        public let message: String

        public var description: String {
            (column.map { "\(table).\($0)" } ?? "table \(table)") + " " + message
        }
    }

    /// The database file.
    public var database: String {
        switch self {
        case let .invalidDeclaration(_, database), let .needsMappedMigration(_, database),
            let .wouldLoseData(_, database), let .cannotRebuild(_, _, database):
            return database
        }
    }

    public var description: String {
        switch self {
        case let .invalidDeclaration(problems, database):
            return "The schema declared for \(database) is not valid: \(Self.list(problems)). Nothing "
                + "was changed. Fix the declaration."
        case let .needsMappedMigration(problems, database):
            return "The schema of \(database) cannot be migrated to the declared one by inference: "
                + "\(Self.list(problems)). Nothing was changed. These changes need a mapped "
                + "migration: pass an EntityMapping for the table to migrateSchema(to:dataLoss:mappings:) "
                + "and produce the new rows in it."
        case let .wouldLoseData(problems, database):
            let columns = problems.filter { $0.column != nil }
            let tables = problems.filter { $0.column == nil }
            var allowed: [String] = []
            if !tables.isEmpty {
                allowed.append("tables: [" + tables.map { "\"\($0.table)\"" }.joined(separator: ", ") + "]")
            }
            if !columns.isEmpty {
                let byTable = Dictionary(grouping: columns, by: \.table).sorted { $0.key < $1.key }
                allowed.append("columns: [" + byTable.map { table, problems in
                    "\"\(table)\": [" + problems.compactMap(\.column).map { "\"\($0)\"" }.joined(separator: ", ") + "]"
                }.joined(separator: ", ") + "]")
            }
            return "Migrating \(database) to the declared schema would drop data: \(Self.list(problems)). "
                + "Nothing was changed. If a new table or column is an old one renamed, declare it with "
                + "renamedFrom: to keep its data; if the data may go, pass "
                + "dataLoss: .allow(\(allowed.joined(separator: ", ")))."
        case let .cannotRebuild(table, features, database):
            return "Table \(table) of \(database) must be rebuilt for the declared changes, but it has "
                + "\(features.joined(separator: ", ")), which a declared schema cannot describe and the "
                + "rebuild would lose. Nothing was changed. Make this table's change with "
                + "rebuildTable(_:definition:options:copying:) before migrateSchema, or remove these "
                + "features first."
        }
    }

    /// The same message as ``description``.
    public var errorDescription: String? { description }

    private static func list(_ problems: [Problem]) -> String {
        problems.map(\.description).joined(separator: "; ")
    }
}
