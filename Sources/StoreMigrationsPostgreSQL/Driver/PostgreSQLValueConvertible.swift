import Foundation
import StoreMigrations

/// A Swift type that converts to and from a ``PostgreSQLValue``: `Bool`, `Int`, `Int32`, `Int64`,
/// `Double`, `String`, `[UInt8]`, `Data`, ``PostgreSQLValue`` itself, and optionals of these
/// (`NULL` reads as `nil`).
///
/// ```swift
/// let count: Int = try db.scalar("SELECT count(*) FROM note") ?? 0
/// ```
public protocol PostgreSQLValueConvertible {
    /// The value as the type, or `nil` when it does not convert (a non-optional type from `NULL`).
    init?(postgreSQLValue value: PostgreSQLValue)
    /// The value to send as a parameter.
    var postgreSQLValue: PostgreSQLValue { get }
}

extension PostgreSQLValue: PostgreSQLValueConvertible {
    public init?(postgreSQLValue value: PostgreSQLValue) { self = value }
    public var postgreSQLValue: PostgreSQLValue { self }
}

extension Optional: PostgreSQLValueConvertible where Wrapped: PostgreSQLValueConvertible {
    public init?(postgreSQLValue value: PostgreSQLValue) {
        if value == .null { self = .none; return }
        guard let wrapped = Wrapped(postgreSQLValue: value) else { return nil }
        self = .some(wrapped)
    }
    public var postgreSQLValue: PostgreSQLValue { map(\.postgreSQLValue) ?? .null }
}

extension Bool: PostgreSQLValueConvertible {
    public init?(postgreSQLValue value: PostgreSQLValue) {
        switch value {
        case .bool(let bool): self = bool
        case .integer(let integer): self = integer != 0
        default: return nil
        }
    }
    public var postgreSQLValue: PostgreSQLValue { .bool(self) }
}

extension Int64: PostgreSQLValueConvertible {
    public init?(postgreSQLValue value: PostgreSQLValue) {
        switch value {
        case .integer(let integer): self = integer
        case .text(let text): guard let integer = Int64(text) else { return nil }; self = integer
        default: return nil
        }
    }
    public var postgreSQLValue: PostgreSQLValue { .integer(self) }
}

extension Int: PostgreSQLValueConvertible {
    public init?(postgreSQLValue value: PostgreSQLValue) {
        guard let integer = Int64(postgreSQLValue: value) else { return nil }
        self = Int(integer)
    }
    public var postgreSQLValue: PostgreSQLValue { .integer(Int64(self)) }
}

extension Int32: PostgreSQLValueConvertible {
    public init?(postgreSQLValue value: PostgreSQLValue) {
        guard let integer = Int64(postgreSQLValue: value), let exact = Int32(exactly: integer) else { return nil }
        self = exact
    }
    public var postgreSQLValue: PostgreSQLValue { .integer(Int64(self)) }
}

extension Double: PostgreSQLValueConvertible {
    public init?(postgreSQLValue value: PostgreSQLValue) {
        switch value {
        case .double(let double): self = double
        case .integer(let integer): self = Double(integer)
        case .text(let text): guard let double = Double(text) else { return nil }; self = double  // numeric
        default: return nil
        }
    }
    public var postgreSQLValue: PostgreSQLValue { .double(self) }
}

extension String: PostgreSQLValueConvertible {
    public init?(postgreSQLValue value: PostgreSQLValue) {
        guard case .text(let text) = value else { return nil }
        self = text
    }
    public var postgreSQLValue: PostgreSQLValue { .text(self) }
}

extension Array: PostgreSQLValueConvertible where Element == UInt8 {
    public init?(postgreSQLValue value: PostgreSQLValue) {
        guard case .bytes(let bytes) = value else { return nil }
        self = bytes
    }
    public var postgreSQLValue: PostgreSQLValue { .bytes(self) }
}

extension Data: PostgreSQLValueConvertible {
    public init?(postgreSQLValue value: PostgreSQLValue) {
        guard case .bytes(let bytes) = value else { return nil }
        self = Data(bytes)
    }
    public var postgreSQLValue: PostgreSQLValue { .bytes(Array(self)) }
}
