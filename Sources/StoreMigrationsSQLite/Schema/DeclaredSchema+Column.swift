import Foundation
import StoreMigrations

extension DeclaredSchema {
    /// A column: its type, whether it may hold `NULL`, and its default.
    public struct Column: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The column's name.
        public let name: String
        /// The declared type, which sets the column's affinity.
        public let type: ColumnType
        /// Whether the column is declared `NOT NULL` (Core Data's *required*).
        public let isNotNull: Bool
        /// The value rows get when an insert leaves the column out; `nil` for `NULL`.
        public let defaultValue: Default?
        /// The name the column had in the previous version of the schema, if it was renamed.
        public let renamedFrom: String?

        /// Declares a column.
        ///
        /// ```swift
        /// .column("id", .integer)
        /// .column("texto", .text, notNull: true, default: "")
        /// .column("creada", .text, notNull: true, default: .expression("CURRENT_TIMESTAMP"))
        /// .column("momento", .text, renamedFrom: "fecha")
        /// ```
        ///
        /// - Parameters:
        ///   - name: The column's name.
        ///   - type: Its declared type.
        ///   - notNull: Whether it refuses `NULL`. A column that becomes `NOT NULL` in a table
        ///     with rows needs a `default`, which its `NULL`s then take.
        ///   - defaultValue: Its default, a value or an SQL expression.
        ///   - renamedFrom: Its name in the previous version, if it was renamed: its values are
        ///     kept. Used only while the table has no column named `name`.
        public static func column(
            _ name: String, _ type: ColumnType, notNull: Bool = false, default defaultValue: Default? = nil,
            renamedFrom: String? = nil
        ) -> Column {
            Column(
                name: name, type: type, isNotNull: notNull,
                defaultValue: defaultValue?.value == .null ? nil : defaultValue, renamedFrom: renamedFrom)
        }

        /// The column as written in `CREATE TABLE`, such as `"texto" TEXT NOT NULL DEFAULT ''`.
        public var description: String { definitionSQL }
    }

    /// A column's default: a value, or an SQL expression evaluated at each insert.
    ///
    /// Literals make values: `default: 0`, `default: "none"`, `default: true`. Expressions are
    /// written without the parentheses SQL puts around them: `.expression("CURRENT_TIMESTAMP")`.
    /// Two defaults are equal when they are the same SQL, whatever the letter case of keywords
    /// and the spacing.
    public struct Default: Sendable, Hashable, Codable, CustomStringConvertible,
        ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
        ExpressibleByBooleanLiteral
    {
        /// The value, when the default is a literal; `nil` for an expression.
        public let value: DatabaseValue?
        /// The default as SQL: a literal such as `'none'` or `0`, or an expression such as
        /// `CURRENT_TIMESTAMP`, without enclosing parentheses.
        public let sql: String
        /// What two defaults must share to be equal.
        private let normalized: String

        /// A default of `value`.
        public static func value(_ value: DatabaseValue) -> Default {
            Default(value: value, sql: value.sqlLiteral)
        }

        /// A default computed by the SQL expression `sql` at each insert, such as
        /// `"CURRENT_TIMESTAMP"` or `"strftime('%s', 'now')"`. An expression that is a literal
        /// is the same default as that value.
        public static func expression(_ sql: String) -> Default {
            Default(parsing: sql)
        }

        /// A text default.
        public init(stringLiteral value: String) { self = .value(.text(value)) }
        /// An integer default.
        public init(integerLiteral value: Int64) { self = .value(.integer(value)) }
        /// A real default.
        public init(floatLiteral value: Double) { self = .value(.real(value)) }
        /// `1` for `true` and `0` for `false`, as SQLite stores booleans.
        public init(booleanLiteral value: Bool) { self = .value(.integer(value ? 1 : 0)) }

        private init(value: DatabaseValue?, sql: String) {
            self.value = value
            self.sql = sql
            self.normalized = SQLTokenizer(sql).normalized()
        }

        /// Reads a default as SQLite reports it in `PRAGMA table_info` (its outer parentheses
        /// already removed) or as a caller wrote it.
        init(parsing text: String) {
            let sql = SQLTokenizer(text).withoutEnclosingParentheses()
            if let value = Self.literal(sql) {
                self.init(value: value, sql: value.sqlLiteral)
            } else {
                self.init(value: nil, sql: sql)
            }
        }

        /// The value of a literal: a number, a string, a blob, `NULL`, `TRUE` or `FALSE`.
        private static func literal(_ sql: String) -> DatabaseValue? {
            if let integer = Int64(sql) { return .integer(integer) }
            let isNumeric = sql.unicodeScalars.allSatisfy { "0123456789.eE+-".unicodeScalars.contains($0) }
            if isNumeric, let real = Double(sql) { return .real(real) }
            switch sql.uppercased() {
            case "NULL": return .null
            case "TRUE": return .integer(1)
            case "FALSE": return .integer(0)
            default: break
            }
            let tokens = SQLTokenizer(sql).tokens()
            if tokens.count == 1, tokens[0].kind == .string {
                // The quotes dropped as scalars: a mark after the opening one is part of the text.
                let inside = String.UnicodeScalarView(sql.unicodeScalars.dropFirst().dropLast())
                return .text(String(inside).undoublingASCII("'"))
            }
            if tokens.count == 2, tokens[0].isKeyword("X"), tokens[1].kind == .string,
                let bytes = hexadecimalBytes(tokens[1].value.dropFirst().dropLast())
            {
                return .blob(bytes)
            }
            return nil
        }

        private static func hexadecimalBytes(_ digits: Substring) -> Data? {
            guard digits.count.isMultiple(of: 2) else { return nil }
            var bytes = Data(capacity: digits.count / 2)
            var index = digits.startIndex
            while index < digits.endIndex {
                let next = digits.index(index, offsetBy: 2)
                guard let byte = UInt8(digits[index..<next], radix: 16) else { return nil }
                bytes.append(byte)
                index = next
            }
            return bytes
        }

        /// The default as written after `DEFAULT`: expressions go in parentheses.
        var definitionSQL: String { value == nil ? "(\(sql))" : sql }

        public var description: String { sql }

        public static func == (lhs: Default, rhs: Default) -> Bool { lhs.normalized == rhs.normalized }
        public func hash(into hasher: inout Hasher) { hasher.combine(normalized) }

        public init(from decoder: any Decoder) throws {
            self.init(parsing: try decoder.singleValueContainer().decode(String.self))
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(sql)
        }
    }
}

extension ColumnType: Codable {
    public init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(sql)
    }
}
