/// SQL text being written, as UTF-8 bytes: appending a string's bytes to an array is a copy,
/// where appending it to a string goes through the string's general-purpose append.
struct SQLText {
    private var bytes: [UInt8] = []

    var text: String { String(decoding: bytes, as: UTF8.self) }

    // Through the text's contiguous bytes, copied at once: appending the UTF-8 view goes byte by
    // byte through its iterator, which cost the statements of a schema of hundreds of tables
    // more than all the rest of their writing (Benchmarks/BENCHMARKS.md).
    static func += (sql: inout SQLText, text: String) {
        var text = text
        text.withUTF8 { sql.bytes.append(contentsOf: $0) }
    }

    /// Appends `name` quoted as an SQL identifier, the one rule `Database.quoted(_:)` and the
    /// declared schema's statements share: in double quotes, each one inside doubled.
    mutating func appendQuoted(_ name: String) {
        let quote = UInt8(ascii: "\"")
        bytes.append(quote)
        var name = name
        name.withUTF8 { name in
            guard name.contains(quote) else { return bytes.append(contentsOf: name) }
            for byte in name {
                if byte == quote { bytes.append(quote) }
                bytes.append(byte)
            }
        }
        bytes.append(quote)
    }

    /// Appends `names` quoted, separated by commas.
    mutating func appendQuotedList(_ names: [String]) {
        for (position, name) in names.enumerated() {
            if position > 0 { self += ", " }
            appendQuoted(name)
        }
    }
}
