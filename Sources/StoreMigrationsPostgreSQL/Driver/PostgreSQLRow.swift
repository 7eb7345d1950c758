import Foundation
import StoreMigrations

/// One row of a query's result: values by position or by column name, converted to the type
/// asked for.
///
/// ```swift
/// for row in try db.rows("SELECT id, title, archived_at FROM note WHERE id > $1", arguments: [100]) {
///     let id: Int = try row["id"]
///     let title: String = try row[1]
///     let archivedAt: String? = try row["archived_at"]   // NULL reads as nil
/// }
/// ```
public struct PostgreSQLRow: Sendable, Hashable, CustomStringConvertible {
    /// The row's values, in column order.
    public let values: [PostgreSQLValue]
    @usableFromInline let layout: Layout

    /// The column names and the statement a row came from, shared by the rows of one result.
    @usableFromInline final class Layout: Sendable, Hashable {
        @usableFromInline let names: [String]
        let sql: String
        let store: String

        init(names: [String], sql: String, store: String) {
            self.names = names
            self.sql = sql
            self.store = store
        }

        // Usable from inlinable code, as the compiler requires of the conformances of such a class.
        @usableFromInline static func == (lhs: Layout, rhs: Layout) -> Bool { lhs.names == rhs.names }
        @usableFromInline func hash(into hasher: inout Hasher) { hasher.combine(names) }

        @usableFromInline func index(of name: String) -> Int? { names.firstIndex(of: name) }
    }

    init(values: [PostgreSQLValue], layout: Layout) {
        self.values = values
        self.layout = layout
    }

    /// The column names, in order.
    public var columnNames: [String] { layout.names }

    // The subscripts are inlinable so that a caller's reads are specialized for the type it
    // asks for: a row transform reads a value or two of every row, and the generic path cost
    // it more than the read itself.

    /// The value in column `index` (from 0), converted to `T`.
    @inlinable public subscript<T: PostgreSQLValueConvertible>(_ index: Int) -> T {
        get throws {
            guard values.indices.contains(index) else {
                throw conversionError("the row has \(values.count) columns, not a column \(index)")
            }
            return try convert(values[index], column: layout.names[index])
        }
    }

    /// The value in the column named `name`, converted to `T`.
    @inlinable public subscript<T: PostgreSQLValueConvertible>(_ name: String) -> T {
        get throws {
            guard let index = layout.index(of: name) else {
                throw conversionError("the row has no column \(name); its columns are \(columnNames.joined(separator: ", "))")
            }
            return try convert(values[index], column: name)
        }
    }

    public var description: String {
        "(" + zip(layout.names, values).map { "\($0): \($1)" }.joined(separator: ", ") + ")"
    }

    @inlinable func convert<T: PostgreSQLValueConvertible>(_ value: PostgreSQLValue, column: String) throws -> T {
        if let converted = T(postgreSQLValue: value) { return converted }
        throw conversionError(value, column: column, as: T.self)
    }

    @usableFromInline func conversionError<T>(_ value: PostgreSQLValue, column: String, as type: T.Type) -> PostgreSQLError {
        conversionError(
            value == .null ? "column \(column) is NULL; read it as \(T.self)?" : "column \(column) holds \(value), not a \(T.self)")
    }

    @usableFromInline func conversionError(_ message: String) -> PostgreSQLError {
        PostgreSQLError(kind: .valueConversion, message: message, sql: layout.sql, store: layout.store)
    }
}
