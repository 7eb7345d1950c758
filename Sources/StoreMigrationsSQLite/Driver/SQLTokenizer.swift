import Foundation
import StoreMigrations

/// Just enough of SQLite's lexical rules to take a `CREATE TABLE` statement apart and to tell
/// whether a statement names a column: quoted identifiers, string literals and comments are
/// recognized so that a comma or parenthesis inside them is not mistaken for structure.
struct SQLTokenizer {
    enum Kind: Equatable {
        /// A bare word (keyword or identifier) or a quoted identifier; `value` holds it unquoted.
        case identifier(quoted: Bool)
        case string
        case openParenthesis
        case closeParenthesis
        case comma
        case other
    }

    struct Token {
        let kind: Kind
        /// Byte offsets in the statement's UTF-8.
        let range: Range<Int>
        /// The identifier without its quotes; the raw text for other tokens.
        let value: String

        /// Whether the token is the bare keyword `keyword` (case-insensitive).
        func isKeyword(_ keyword: String) -> Bool {
            kind == .identifier(quoted: false) && value.uppercased() == keyword
        }

        /// Whether the token names `identifier`, quoted or not (case-insensitive, like SQL).
        func names(_ identifier: String) -> Bool {
            if case .identifier = kind { return value.lowercased() == identifier.lowercased() }
            return false
        }
    }

    let sql: String
    private let bytes: [UInt8]

    init(_ sql: String) {
        self.sql = sql
        self.bytes = Array(sql.utf8)
    }

    /// The text of the bytes in `range`.
    func text(_ range: Range<Int>) -> String {
        String(decoding: bytes[range], as: UTF8.self)
    }

    /// The statement's tokens, without whitespace and comments.
    func tokens() -> [Token] {
        var tokens: [Token] = []
        var index = 0
        while index < bytes.count {
            let start = index
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"), 0x0C:
                index += 1
            case UInt8(ascii: "-") where next(index) == UInt8(ascii: "-"):
                while index < bytes.count, bytes[index] != UInt8(ascii: "\n") { index += 1 }
            case UInt8(ascii: "/") where next(index) == UInt8(ascii: "*"):
                index += 2
                while index < bytes.count, !(bytes[index] == UInt8(ascii: "*") && next(index) == UInt8(ascii: "/")) {
                    index += 1
                }
                index = min(index + 2, bytes.count)
            case UInt8(ascii: "'"):
                index = endOfQuoted(from: index, closing: byte).end
                tokens.append(Token(kind: .string, range: start..<index, value: text(start..<index)))
            case UInt8(ascii: "\""), UInt8(ascii: "`"):
                let (end, contentEnd) = endOfQuoted(from: index, closing: byte)
                index = end
                tokens.append(Token(
                    kind: .identifier(quoted: true), range: start..<index,
                    value: unquoted(start + 1..<contentEnd, quote: byte)))
            case UInt8(ascii: "["):
                // Brackets have no escape: the name ends at the first `]`.
                let contentEnd = bytes[(start + 1)...].firstIndex(of: UInt8(ascii: "]")) ?? bytes.count
                index = min(contentEnd + 1, bytes.count)
                tokens.append(Token(kind: .identifier(quoted: true), range: start..<index, value: text(start + 1..<contentEnd)))
            case UInt8(ascii: "("):
                index += 1
                tokens.append(Token(kind: .openParenthesis, range: start..<index, value: "("))
            case UInt8(ascii: ")"):
                index += 1
                tokens.append(Token(kind: .closeParenthesis, range: start..<index, value: ")"))
            case UInt8(ascii: ","):
                index += 1
                tokens.append(Token(kind: .comma, range: start..<index, value: ","))
            default:
                if Self.isWordByte(byte) {
                    while index < bytes.count, Self.isWordByte(bytes[index]) { index += 1 }
                    tokens.append(Token(kind: .identifier(quoted: false), range: start..<index, value: text(start..<index)))
                } else {
                    index += 1
                    tokens.append(Token(kind: .other, range: start..<index, value: text(start..<index)))
                }
            }
        }
        return tokens
    }

    /// Whether the statement names `identifier` anywhere outside string literals and comments.
    func mentions(_ identifier: String) -> Bool {
        tokens().contains { $0.names(identifier) }
    }

    /// A `CREATE TABLE` statement split into the definitions between its outer parentheses
    /// (columns and table constraints, each as written, without the comments around it) and the
    /// options after them (such as `WITHOUT ROWID`); `nil` for `CREATE TABLE … AS SELECT` and
    /// anything else without them.
    func tableDefinition() -> (items: [String], options: String)? {
        let tokens = tokens()
        guard let open = tokens.firstIndex(where: { $0.kind == .openParenthesis }) else { return nil }
        var depth = 0
        var items: [String] = []
        // The byte range from the item's first token to its last, so that a comment after an
        // item cannot swallow the comma the items are joined with again.
        var item: Range<Int>?
        for token in tokens[open...] {
            switch token.kind {
            case .openParenthesis:
                depth += 1
            case .closeParenthesis:
                depth -= 1
                if depth == 0 {
                    if let item { items.append(text(item)) }
                    let rest = tokens.filter { $0.range.lowerBound >= token.range.upperBound }
                    guard let first = rest.first, let last = rest.last else { return (items, "") }
                    return (items, text(first.range.lowerBound..<last.range.upperBound))
                }
            case .comma where depth == 1:
                if let item { items.append(text(item)) }
                item = nil
                continue
            default:
                break
            }
            if depth >= 1, token.range.lowerBound > tokens[open].range.lowerBound {
                item = (item?.lowerBound ?? token.range.lowerBound)..<token.range.upperBound
            }
        }
        return nil
    }

    /// The keywords that open a table constraint rather than a column definition.
    static let tableConstraintKeywords: Set<String> = ["CONSTRAINT", "PRIMARY", "UNIQUE", "CHECK", "FOREIGN"]

    private func next(_ index: Int) -> UInt8? {
        index + 1 < bytes.count ? bytes[index + 1] : nil
    }

    /// The index just past a quoted token starting at `start`, and where its content ends: at its
    /// closing quote, or, when the text ends first, at the end (so that an unclosed token keeps
    /// its last character). A doubled quote stays inside.
    private func endOfQuoted(from start: Int, closing: UInt8) -> (end: Int, contentEnd: Int) {
        var index = start + 1
        while index < bytes.count {
            if bytes[index] == closing {
                if next(index) == closing {
                    index += 2
                    continue
                }
                return (index + 1, index)
            }
            index += 1
        }
        return (bytes.count, bytes.count)
    }

    /// The text of `range` with each doubled `quote` made single. Done on bytes: Foundation's
    /// `replacingOccurrences` compares characters, and a quote that a combining mark follows is
    /// another character to it, so it left such a quote doubled.
    private func unquoted(_ range: Range<Int>, quote: UInt8) -> String {
        var name: [UInt8] = []
        var index = range.lowerBound
        while index < range.upperBound {
            name.append(bytes[index])
            index += bytes[index] == quote && index + 1 < range.upperBound && bytes[index + 1] == quote ? 2 : 1
        }
        return String(decoding: name, as: UTF8.self)
    }

    private static func isWordByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "$"), 0x80...:
            return true
        default:
            return false
        }
    }
}
