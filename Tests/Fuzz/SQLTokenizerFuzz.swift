/// `SQLTokenizer` against SQLite's lexical rules as far as it claims to follow them: tokens in
/// order and in bounds, nothing but white space and comments between them, quoted identifiers
/// unquoted exactly, and the helpers built on it (normalizing, taking a `CREATE TABLE` apart)
/// consistent with the tokens.
enum SQLTokenizerFuzz {
    static func run(_ input: UnsafeRawBufferPointer) {
        let sql = String(decoding: input, as: UTF8.self)
        let bytes = Array(sql.utf8)
        let tokenizer = SQLTokenizer(sql)
        let tokens = tokenizer.tokens()

        var end = 0
        for token in tokens {
            let range = token.range
            require(range.lowerBound >= end && range.upperBound <= bytes.count && !range.isEmpty,
                    "token \(range) overlaps the one before, is empty or out of bounds")
            require(isSpaceAndComments(bytes[end..<range.lowerBound]), "text between tokens at \(end)..<\(range.lowerBound) is lost")
            end = range.upperBound
            checkKind(of: token, in: bytes)
            if case .identifier = token.kind {
                let requoted = SQLTokenizer(Database.quoted(token.value)).tokens()
                require(requoted.count == 1 && requoted[0].value == token.value, "identifier \(token.value) does not survive quoting")
            }
        }
        require(isSpaceAndComments(bytes[end...]), "text after the last token is lost")
        // Once, not for every name: each call tokenizes the statement again.
        if let name = tokens.last(where: { if case .identifier = $0.kind { true } else { false } })?.value {
            require(tokenizer.mentions(name), "the statement does not mention its identifier \(name)")
        }

        // Normalizing twice changes nothing more: two spellings compare equal by it.
        let normalized = tokenizer.normalized()
        require(SQLTokenizer(normalized).normalized() == normalized, "normalizing \(normalized) again changes it")
        _ = tokenizer.withoutEnclosingParentheses()

        if let (items, _) = tokenizer.tableDefinition() {
            for item in items {
                let itemTokens = SQLTokenizer(item).tokens()
                require(!itemTokens.isEmpty, "an empty item in a table definition")
                // Items are split at the commas outside their own parentheses only.
                var depth = 0
                for token in itemTokens {
                    switch token.kind {
                    case .openParenthesis: depth += 1
                    case .closeParenthesis: depth -= 1
                    case .comma: require(depth > 0, "item \(item) holds a comma outside parentheses")
                    default: break
                    }
                    require(depth >= 0, "item \(item) closes a parenthesis it did not open")
                }
                require(depth == 0, "item \(item) leaves a parenthesis open")
            }
        }
    }

    /// Whether `bytes` are only white space and comments, by SQLite's rules: `--` to the end of
    /// the line, `/*` to `*/` or the end of the text.
    static func isSpaceAndComments(_ bytes: ArraySlice<UInt8>) -> Bool {
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let rest = bytes[index...]
            if [0x20, 0x09, 0x0A, 0x0D, 0x0C].contains(bytes[index]) {
                index += 1
            } else if rest.starts(with: Array("--".utf8)) {
                index = rest.firstIndex(of: 0x0A).map { $0 + 1 } ?? bytes.endIndex
            } else if rest.starts(with: Array("/*".utf8)) {
                var close = index + 2
                while close < bytes.endIndex, !bytes[close...].starts(with: Array("*/".utf8)) { close += 1 }
                index = min(close + 2, bytes.endIndex)
            } else {
                return false
            }
        }
        return true
    }

    /// Checks the token's kind and value against its text.
    static func checkKind(of token: SQLTokenizer.Token, in bytes: [UInt8]) {
        let raw = Array(bytes[token.range])
        let first = raw[0]
        switch token.kind {
        case .openParenthesis: require(raw == [UInt8(ascii: "(")], "'(' token \(raw)")
        case .closeParenthesis: require(raw == [UInt8(ascii: ")")], "')' token \(raw)")
        case .comma: require(raw == [UInt8(ascii: ",")], "',' token \(raw)")
        case .string:
            require(first == UInt8(ascii: "'") && token.value == String(decoding: raw, as: UTF8.self), "string token \(raw)")
        case .identifier(quoted: false):
            require(raw.allSatisfy(isWordByte) && token.value == String(decoding: raw, as: UTF8.self), "word token \(raw)")
        case .identifier(quoted: true):
            require(token.value == unquoted(raw), "quoted identifier \(raw) read as \(token.value)")
        case .other:
            require(raw.count == 1 && !isWordByte(first) && !"'\"`[(), \t\n\r\u{0C}".utf8.contains(first), "other token \(raw)")
        }
    }

    /// The identifier a quoted token spells: the text between its quotes, with a doubled quote
    /// standing for one (except in brackets, which have no escape). An unclosed token runs to
    /// the end of the text.
    static func unquoted(_ raw: [UInt8]) -> String {
        let closing = raw[0] == UInt8(ascii: "[") ? UInt8(ascii: "]") : raw[0]
        var name: [UInt8] = []
        var index = 1
        while index < raw.count {
            if raw[index] == closing {
                guard closing != UInt8(ascii: "]"), index + 1 < raw.count, raw[index + 1] == closing else { break }
                index += 1
            }
            name.append(raw[index])
            index += 1
        }
        return String(decoding: name, as: UTF8.self)
    }

    static func isWordByte(_ byte: UInt8) -> Bool {
        byte >= 0x80 || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "$")
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }
}
