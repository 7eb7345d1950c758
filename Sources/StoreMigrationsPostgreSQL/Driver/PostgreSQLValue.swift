import Foundation
import StoreMigrations

/// A value sent to PostgreSQL as a query parameter or read from a result row.
///
/// Literals make parameter lists short:
///
/// ```swift
/// try db.execute(
///     "INSERT INTO note(id, title, archived) VALUES ($1, $2, $3)", arguments: [42, "Welcome", false])
/// try db.execute("UPDATE note SET title = $1 WHERE id = $2", arguments: [.null, 42])
/// ```
///
/// Parameters travel in PostgreSQL's text format, typed as `bool`, `int8`, `float8` or `bytea`
/// (text is sent untyped, so the server reads it as the column's type: `uuid`, `jsonb`, dates).
/// Result values are read by column type: `bool`, integers (`int2`, `int4`, `int8`, `oid`),
/// floats (`float4`, `float8`) and `bytea` become the matching case, everything else `.text`.
public enum PostgreSQLValue: Sendable, Hashable, CustomStringConvertible {
    /// SQL `NULL`.
    case null
    /// A `bool`.
    case bool(Bool)
    /// An integer column (`int2`, `int4`, `int8`) or parameter (sent as `int8`).
    case integer(Int64)
    /// A `float4` or `float8` column, or a parameter sent as `float8`.
    case double(Double)
    /// Text, or any type read in its text form (`numeric`, `uuid`, `jsonb`, dates, …).
    case text(String)
    /// A `bytea`.
    case bytes([UInt8])

    public var description: String {
        switch self {
        case .null: return "NULL"
        case .bool(let value): return value ? "true" : "false"
        case .integer(let value): return String(value)
        case .double(let value): return String(value)
        case .text(let value): return "'\(value)'"
        case .bytes(let value): return "bytea(\(value.count) bytes)"
        }
    }

    // MARK: Wire format

    /// The parameter's type OID for the server, or 0 to let the server infer it.
    var parameterType: UInt32 {
        switch self {
        case .null, .text: return 0
        case .bool: return PostgreSQLType.bool
        case .integer: return PostgreSQLType.int8
        case .double: return PostgreSQLType.float8
        case .bytes: return PostgreSQLType.bytea
        }
    }

    /// The value in PostgreSQL's text format, or `nil` for `NULL`.
    var textFormat: String? {
        switch self {
        case .null: return nil
        case .bool(let value): return value ? "t" : "f"
        case .integer(let value): return String(value)
        case .double(let value):
            if value.isNaN { return "NaN" }
            if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
            return String(value)
        case .text(let value): return value
        case .bytes(let value): return "\\x" + Self.hex(value)
        }
    }

    /// The most bytes ``writeText(to:)`` writes, its NUL included; 0 for `NULL`.
    var textCapacity: Int {
        switch self {
        case .null: return 0
        case .bool: return 2
        case .integer: return 21  // "-9223372036854775808" and NUL
        case .double: return (textFormat?.utf8.count ?? 0) + 1
        case .text(let value): return value.utf8.count + 1
        case .bytes(let value): return 2 + 2 * value.count + 1
        }
    }

    /// Writes the value in PostgreSQL's text format, NUL-terminated, at `next`, which it moves
    /// past the NUL; returns where the text starts, or `nil` (writing nothing) for `NULL`. The
    /// caller provides ``textCapacity`` bytes.
    func writeText(to next: inout UnsafeMutablePointer<CChar>) -> UnsafePointer<CChar>? {
        let start = next
        func put(_ byte: UInt8) {
            next.pointee = CChar(bitPattern: byte)
            next += 1
        }
        switch self {
        case .null:
            return nil
        case .bool(let value):
            put(value ? UInt8(ascii: "t") : UInt8(ascii: "f"))
        case .integer(let value):
            if value < 0 { put(UInt8(ascii: "-")) }
            var rest = value.magnitude
            var digits = 1
            while rest >= 10 {
                rest /= 10
                digits += 1
            }
            rest = value.magnitude
            for position in stride(from: digits - 1, through: 0, by: -1) {
                next[position] = CChar(bitPattern: UInt8(ascii: "0") + UInt8(rest % 10))
                rest /= 10
            }
            next += digits
        case .text(var value):
            // Text holding a NUL byte ends there, as in any C string libpq sends.
            value.withUTF8 { bytes in
                guard let base = bytes.baseAddress else { return }
                UnsafeMutableRawPointer(next).copyMemory(from: base, byteCount: bytes.count)
                next += bytes.count
            }
        case .double:
            for byte in textFormat!.utf8 { put(byte) }
        case .bytes(let value):
            put(UInt8(ascii: "\\"))
            put(UInt8(ascii: "x"))
            for byte in value {
                put(Self.hexDigits[Int(byte >> 4)])
                put(Self.hexDigits[Int(byte & 0x0F)])
            }
        }
        put(0)
        return UnsafePointer(start)
    }

    /// Reads the text form `text` of a value of type `type`.
    init(text: UnsafePointer<CChar>, length: Int, type: UInt32) {
        switch type {
        case PostgreSQLType.bool:
            self = .bool(text.pointee == UInt8(ascii: "t").asCChar)
        case PostgreSQLType.int2, PostgreSQLType.int4, PostgreSQLType.int8, PostgreSQLType.oid:
            // Parsed in place: a String per value would cost a row transform more than its I/O
            // (and `strtoll`, with its locale and whitespace handling, a third of that).
            self = Self.integer(text, length: length).map(PostgreSQLValue.integer)
                ?? .text(String(decoding: UnsafeRawBufferPointer(start: text, count: length), as: UTF8.self))
        case PostgreSQLType.float4, PostgreSQLType.float8:
            self = Double(String(cString: text)).map(PostgreSQLValue.double) ?? .text(String(cString: text))
        case PostgreSQLType.bytea:
            self = .bytes(Self.unhex(text, length: length))
        default:
            self = .text(String(decoding: UnsafeRawBufferPointer(start: text, count: length), as: UTF8.self))
        }
    }

    /// The integer `text` spells in decimal (an optional `-`, then digits), or `nil` when it
    /// spells anything else or does not fit.
    private static func integer(_ text: UnsafePointer<CChar>, length: Int) -> Int64? {
        let bytes = UnsafeRawBufferPointer(start: text, count: length)
        let negative = bytes.first == UInt8(ascii: "-")
        var index = negative ? 1 : 0
        guard index < length else { return nil }
        // Accumulated as a negative number, whose range reaches Int64.min.
        var value: Int64 = 0
        while index < length {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (shifted, overflow) = value.multipliedReportingOverflow(by: 10)
            let (next, underflow) = shifted.subtractingReportingOverflow(Int64(digit))
            guard !overflow, !underflow else { return nil }
            value = next
            index += 1
        }
        if negative { return value }
        return value == .min ? nil : -value
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    static func hex(_ bytes: [UInt8]) -> String {
        var characters: [UInt8] = []
        characters.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            characters.append(hexDigits[Int(byte >> 4)])
            characters.append(hexDigits[Int(byte & 0x0F)])
        }
        return String(decoding: characters, as: UTF8.self)
    }

    /// Decodes `bytea`'s hex output (`\x0a1b…`), the server's default since PostgreSQL 9.0.
    private static func unhex(_ text: UnsafePointer<CChar>, length: Int) -> [UInt8] {
        let raw = UnsafeRawBufferPointer(start: text, count: length)
        guard length >= 2, raw[0] == UInt8(ascii: "\\"), raw[1] == UInt8(ascii: "x") else { return Array(raw) }
        func nibble(_ c: UInt8) -> UInt8 {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return 0
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity((length - 2) / 2)
        var index = 2
        while index + 1 < length {
            bytes.append(nibble(raw[index]) << 4 | nibble(raw[index + 1]))
            index += 2
        }
        return bytes
    }
}

extension PostgreSQLValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .text(value) }
}

/// The type OIDs this wrapper reads and sends (`pg_type.oid`, fixed since PostgreSQL 7).
enum PostgreSQLType {
    static let bool: UInt32 = 16
    static let bytea: UInt32 = 17
    static let int8: UInt32 = 20
    static let int2: UInt32 = 21
    static let int4: UInt32 = 23
    static let oid: UInt32 = 26
    static let float4: UInt32 = 700
    static let float8: UInt32 = 701
}

extension UInt8 {
    fileprivate var asCChar: CChar { CChar(bitPattern: self) }
}
