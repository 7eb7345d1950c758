import Foundation

extension String {
    /// This text with `escape` written before every occurrence of each ASCII character in
    /// `special`: `"my \"table\""` for SQL is `name.escapingASCII("\"", with: "\"")`.
    ///
    /// Compared byte by byte, not with Foundation's `replacingOccurrences(of:with:)`, which compares
    /// characters: a quote that a combining mark follows (`"\u{301}`) is one character that is
    /// not a quote to it, so a quoted name or literal would end early (found by the fuzz targets).
    package func escapingASCII(_ special: String, with escape: Unicode.Scalar) -> String {
        let special = special.utf8, escape = UInt8(escape.value)
        precondition(special.allSatisfy { $0 < 0x80 } && escape < 0x80, "only ASCII characters are escaped byte by byte")
        // Most names and literals have nothing to escape: a creation from the declared schema
        // quotes thousands of them, and returning the text itself spares a copy of each. One byte
        // to look for (a quote, nearly always) is compared in the text's own bytes, rather than
        // looked up in `special` for each byte through the view's iterator.
        let needsEscaping: Bool
        if special.count == 1, let only = special.first {
            needsEscaping = utf8.withContiguousStorageIfAvailable { $0.contains(only) } ?? utf8.contains(only)
        } else {
            needsEscaping = utf8.contains(where: special.contains)
        }
        guard needsEscaping else { return self }
        var escaped: [UInt8] = []
        escaped.reserveCapacity(utf8.count + 2)
        for byte in utf8 {
            if special.contains(byte) { escaped.append(escape) }
            escaped.append(byte)
        }
        return String(decoding: escaped, as: UTF8.self)
    }

    /// This text with every doubled `quote` (an ASCII character) made single, byte by byte: the
    /// inverse of `escapingASCII(quote, with: quote)` for the inside of a quoted SQL literal.
    package func undoublingASCII(_ quote: Unicode.Scalar) -> String {
        let quote = UInt8(quote.value)
        precondition(quote < 0x80, "only ASCII characters are undoubled byte by byte")
        var result: [UInt8] = []
        result.reserveCapacity(utf8.count)
        var skipNextQuote = false
        for byte in utf8 {
            if byte == quote, skipNextQuote {
                skipNextQuote = false
                continue
            }
            skipNextQuote = byte == quote
            result.append(byte)
        }
        return String(decoding: result, as: UTF8.self)
    }
}
