#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import Foundation
import StoreMigrations

/// One row of a query's result: its column names and values, read with typed subscripts by
/// column name or index.
///
/// ```swift
/// for row in try db.rows("SELECT id, title, note FROM event") {
///     let id: Int64 = try row["id"]
///     let title: String = try row[1]
///     let note: String? = try row["note"]   // nil when NULL
/// }
/// ```
///
/// A subscript throws an ``SQLiteError`` naming the column and the statement when the column
/// does not exist or its value does not convert: `NULL` read as a non-optional type, text read
/// as a number.
public struct Row: Sendable, Hashable, CustomStringConvertible {
    /// The row's values, in column order.
    public let values: [DatabaseValue]
    @usableFromInline let layout: Layout

    init(values: [DatabaseValue], layout: Layout) {
        self.values = values
        self.layout = layout
    }

    /// The column names, in order.
    public var columnNames: [String] { layout.names }

    // The subscripts are inlinable so that callers get them specialized for `T`: called
    // generically across the module, each read costs a runtime metadata lookup, which a
    // migration mapping millions of rows pays millions of times.

    /// The value of the column at `index` (from 0), converted to `T`.
    @inlinable public subscript<T: DatabaseValueConvertible>(_ index: Int) -> T {
        get throws {
            guard values.indices.contains(index) else { throw indexOutOfRange(index) }
            guard let converted = T.fromDatabaseValue(values[index]) else { throw mismatch(at: index, as: T.self) }
            return converted
        }
    }

    /// The value of the column named `column` (compared case-insensitively, like SQL), converted
    /// to `T`.
    @inlinable public subscript<T: DatabaseValueConvertible>(_ column: String) -> T {
        get throws {
            // A layout and values of different lengths would be a bug of this module: an error
            // still, never a trap.
            guard let index = layout.index(of: column), values.indices.contains(index) else {
                throw noSuchColumn(column)
            }
            guard let converted = T.fromDatabaseValue(values[index]) else { throw mismatch(at: index, as: T.self) }
            return converted
        }
    }

    @usableFromInline func indexOutOfRange(_ index: Int) -> SQLiteError {
        layout.error(
            code: SQLITE_RANGE,
            "column index \(index) is out of range: the row has \(values.count) columns "
                + "(\(columnNames.joined(separator: ", ")))")
    }

    @usableFromInline func noSuchColumn(_ column: String) -> SQLiteError {
        layout.error(
            code: SQLITE_ERROR,
            "the row has no column \"\(column)\"; its columns are " + columnNames.joined(separator: ", "))
    }

    @usableFromInline func mismatch<T>(at index: Int, as type: T.Type) -> SQLiteError {
        let value = values[index]
        let hint = value == .null ? "; read it as an optional" : ""
        return layout.error(
            code: SQLITE_MISMATCH, "column \"\(columnName(at: index))\" holds \(value), which is not a \(T.self)\(hint)")
    }

    /// The name of the column at `index`, or its position when the layout has no name for it.
    @usableFromInline func columnName(at index: Int) -> String {
        columnNames.indices.contains(index) ? columnNames[index] : "#\(index)"
    }

    public var description: String {
        "[" + zip(columnNames, values).map { "\($0): \($1)" }.joined(separator: ", ") + "]"
    }

    public static func == (lhs: Row, rhs: Row) -> Bool {
        lhs.values == rhs.values && lhs.columnNames == rhs.columnNames
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(values)
        hasher.combine(columnNames)
    }

    /// The column names of one statement, shared by all the rows it produces, and what its errors
    /// need to name the statement and the file.
    @usableFromInline final class Layout: Sendable {
        let names: [String]
        let sql: String
        let path: String

        init(names: [String], sql: String, path: String) {
            self.names = names
            self.sql = sql
            self.path = path
        }

        @usableFromInline func index(of column: String) -> Int? {
            names.firstIndex(of: column)
                ?? names.firstIndex { $0.caseInsensitiveCompare(column) == .orderedSame }
        }

        func error(code: Int32, _ message: String) -> SQLiteError {
            SQLiteError(extendedCode: code, message: message, sql: sql, path: path)
        }
    }
}
