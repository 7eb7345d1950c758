import Foundation
import StoreMigrations

/// A value as SQLite stores it: one of its five storage classes.
///
/// Literals make statement arguments read naturally; other values convert with
/// ``init(_:)``:
///
/// ```swift
/// try db.execute(
///     "INSERT INTO event(id, title, note) VALUES (?, ?, ?)", arguments: [1, "Launch", nil])
/// try db.execute(
///     "UPDATE event SET title = ? WHERE id = ?",
///     arguments: [DatabaseValue(title), DatabaseValue(id)])
/// ```
public enum DatabaseValue: Sendable, Hashable {
    /// SQL `NULL`.
    case null
    /// A 64-bit signed integer.
    case integer(Int64)
    /// A 64-bit floating-point number.
    case real(Double)
    /// UTF-8 text.
    case text(String)
    /// Bytes.
    case blob(Data)

    /// The value of `value` as SQLite stores it; `Bool` becomes `0` or `1`, `nil` becomes `NULL`.
    @inlinable public init(_ value: some DatabaseValueConvertible) {
        self = value.databaseValue
    }

    /// The value written as an SQL literal, for the `DEFAULT` clauses of schema helpers.
    var sqlLiteral: String {
        switch self {
        case .null: return "NULL"
        case let .integer(value): return String(value)
        case let .real(value):
            // Non-finite numbers have no SQL literal; SQLite stores them as NULL when bound.
            return value.isFinite ? "\(value)" : "NULL"
        case let .text(value): return "'" + value.escapingASCII("'", with: "'") + "'"
        case let .blob(value): return "X'" + value.map { String(format: "%02X", $0) }.joined() + "'"
        }
    }
}

extension DatabaseValue: CustomStringConvertible {
    public var description: String {
        switch self {
        case .null: return "NULL"
        case let .integer(value): return String(value)
        case let .real(value): return String(value)
        case let .text(value): return "\"\(value)\""
        case let .blob(value): return "<\(value.count) bytes>"
        }
    }
}

extension DatabaseValue: ExpressibleByNilLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByBooleanLiteral
{
    /// Creates `NULL`.
    public init(nilLiteral: ()) { self = .null }
    /// Creates an integer.
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// Creates a real number.
    public init(floatLiteral value: Double) { self = .real(value) }
    /// Creates text.
    public init(stringLiteral value: String) { self = .text(value) }
    /// Creates `1` for `true` and `0` for `false`, as SQLite stores booleans.
    public init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }
}

/// A Swift type that converts to and from a ``DatabaseValue``, so that rows can be read with
/// typed subscripts:
///
/// ```swift
/// let id: Int64 = try row["id"]
/// let note: String? = try row["note"]   // nil when NULL
/// ```
///
/// `Int`, `Int64`, `Double`, `Bool`, `String`, `Data`, ``DatabaseValue`` and optionals of them
/// conform. Their conversions are inlinable, so that reading a row's values costs no generic
/// dispatch.
public protocol DatabaseValueConvertible {
    /// The value as SQLite stores it.
    var databaseValue: DatabaseValue { get }
    /// Converts a stored value, or returns `nil` when it cannot be represented as `Self`
    /// (`NULL` for a non-optional type, text for a number, a fractional real for an integer).
    static func fromDatabaseValue(_ value: DatabaseValue) -> Self?
}

extension DatabaseValue: DatabaseValueConvertible {
    @inlinable public var databaseValue: DatabaseValue { self }
    @inlinable public static func fromDatabaseValue(_ value: DatabaseValue) -> DatabaseValue? { value }
}

extension Int64: DatabaseValueConvertible {
    @inlinable public var databaseValue: DatabaseValue { .integer(self) }
    @inlinable public static func fromDatabaseValue(_ value: DatabaseValue) -> Int64? {
        switch value {
        case let .integer(value): return value
        case let .real(value): return Int64(exactly: value)
        default: return nil
        }
    }
}

extension Int: DatabaseValueConvertible {
    @inlinable public var databaseValue: DatabaseValue { .integer(Int64(self)) }
    @inlinable public static func fromDatabaseValue(_ value: DatabaseValue) -> Int? {
        Int64.fromDatabaseValue(value).flatMap { Int(exactly: $0) }
    }
}

extension Double: DatabaseValueConvertible {
    @inlinable public var databaseValue: DatabaseValue { .real(self) }
    @inlinable public static func fromDatabaseValue(_ value: DatabaseValue) -> Double? {
        switch value {
        case let .integer(value): return Double(value)
        case let .real(value): return value
        default: return nil
        }
    }
}

extension Bool: DatabaseValueConvertible {
    @inlinable public var databaseValue: DatabaseValue { .integer(self ? 1 : 0) }
    @inlinable public static func fromDatabaseValue(_ value: DatabaseValue) -> Bool? {
        switch value {
        case let .integer(value): return value != 0
        case let .real(value): return value != 0
        default: return nil
        }
    }
}

extension String: DatabaseValueConvertible {
    @inlinable public var databaseValue: DatabaseValue { .text(self) }
    @inlinable public static func fromDatabaseValue(_ value: DatabaseValue) -> String? {
        if case let .text(value) = value { return value }
        return nil
    }
}

extension Data: DatabaseValueConvertible {
    @inlinable public var databaseValue: DatabaseValue { .blob(self) }
    @inlinable public static func fromDatabaseValue(_ value: DatabaseValue) -> Data? {
        switch value {
        case let .blob(value): return value
        // Blobs written as text by other tools (hex editors, CSV imports) still read back.
        case let .text(value): return Data(value.utf8)
        default: return nil
        }
    }
}

extension Optional: DatabaseValueConvertible where Wrapped: DatabaseValueConvertible {
    @inlinable public var databaseValue: DatabaseValue { self?.databaseValue ?? .null }
    @inlinable public static func fromDatabaseValue(_ value: DatabaseValue) -> Wrapped?? {
        if case .null = value { return .some(nil) }
        return Wrapped.fromDatabaseValue(value).map { .some($0) }
    }
}
