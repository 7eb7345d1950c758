import Testing
@testable import StoreMigrations

@Suite struct TextEscapingTests {
    /// Escaping written the slow way, every byte copied: what the fast path must equal.
    private func escapedByteByByte(_ text: String, _ special: String, _ escape: UInt8) -> String {
        var bytes: [UInt8] = []
        for byte in text.utf8 {
            if special.utf8.contains(byte) { bytes.append(escape) }
            bytes.append(byte)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func textWithNothingToEscapeComesBackAsItWasAndTheRestIsEscapedByteByByte() {
        let texts = [
            "", "\"", "\"\"", "plain", "t0_on_name", "my \"table\"", "\"start", "end\"", "a\"b\"c",
            "\"\u{301}", "é\"è", "名前", "名\"前", "don't", "''", "back\\slash", "dot.ted", "\\.\\",
            String(repeating: "x", count: 1000) + "\"", "\u{0}\"\u{0}", "👩‍👩‍👧\"",
        ]
        for text in texts {
            for (special, escape) in [("\"", UInt8(ascii: "\"")), ("'", UInt8(ascii: "'")), ("\\.", UInt8(ascii: "\\"))] {
                let escaped = text.escapingASCII(special, with: Unicode.Scalar(escape))
                #expect(
                    Array(escaped.utf8) == Array(escapedByteByByte(text, special, escape).utf8),
                    "\(text.debugDescription) escaping \(special.debugDescription)")
            }
        }
    }
}
