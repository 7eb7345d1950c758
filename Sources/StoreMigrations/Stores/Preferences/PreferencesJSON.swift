import Foundation

/// Reads and writes ``Preferences`` as a JSON object, exactly and the same way on every platform.
///
/// `JSONSerialization` cannot tell `1` from `1.0` or `true` on every platform, and writes
/// `1.0` as `1`; this codec keeps each ``PreferenceValue`` case through a round trip, so that
/// values a migration did not touch are written back as they were read:
/// - integers are written without a fraction and read back as `.int` (text with a fraction or
///   an exponent is a `.double`, always written with one); an integer beyond 64 bits is an error,
///   not a silently rounded `Double`;
/// - a date is written as `{"$date": "2024-05-01T09:30:00.000Z"}` (ISO 8601, UTC, to the
///   millisecond, or to the microsecond or nanosecond when a date needs more digits to read
///   back exactly) and data as `{"$data": "<base64>"}`: plain strings stay strings. An object
///   whose only key is `$date` (or `$data`) holding a valid string reads back as a date (data);
/// - `null` reads as ``PreferenceValue/null`` and is written back as `null`;
/// - duplicate keys are an error naming their position, since one of the values would be lost.
///
/// Output is indented with two spaces, keys sorted, so that files diff well.
enum PreferencesJSON {
    static let dateKey = "$date"
    static let dataKey = "$data"

    /// `date` in ISO 8601, UTC, with the fewest fractional digits (3, 6 or 9) that read back as
    /// exactly `date` through ``date(from:)``.
    ///
    /// The fraction is rounded, not truncated: `ISO8601FormatStyle` truncates, and the date read
    /// back from `.936` is a hair below it, so every rewrite of the file (one per migration step)
    /// would move such dates back by a millisecond.
    static func text(of date: Date) -> String {
        let interval = date.timeIntervalSinceReferenceDate
        guard interval.isFinite, abs(interval) < 1e15 else {
            return date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        }
        var candidate = ""
        for digits in [3, 6, 9] {
            candidate = text(of: interval, digits: digits)
            if self.date(from: candidate) == date { break }
        }
        return candidate
    }

    private static func text(of interval: TimeInterval, digits: Int) -> String {
        var whole = interval.rounded(.down)
        let scale = [3: 1e3, 6: 1e6, 9: 1e9][digits]!
        var fraction = ((interval - whole) * scale).rounded()
        if fraction >= scale {
            whole += 1
            fraction = 0
        }
        let prefix = Date(timeIntervalSinceReferenceDate: whole).formatted(Date.ISO8601FormatStyle())
        let digitsText = String(Int(fraction))
        return prefix.dropLast() + "." + String(repeating: "0", count: digits - digitsText.count) + digitsText + "Z"
    }

    /// Parses the text of a `$date`: ISO 8601 with any number of fractional digits, which are
    /// added to the whole seconds exactly, so that ``text(of:)`` round-trips.
    static func date(from text: String) -> Date? {
        guard let tee = text.firstIndex(of: "T"), let dot = text[tee...].firstIndex(of: ".") else {
            return Date(iso8601: text)
        }
        let digits = text[text.index(after: dot)...].prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, let fraction = Double("0." + digits),
              let whole = try? Date.ISO8601FormatStyle().parse(String(text[..<dot] + text[digits.endIndex...]))
        else { return Date(iso8601: text) }
        return Date(timeIntervalSinceReferenceDate: whole.timeIntervalSinceReferenceDate + fraction)
    }

    static func decode(_ data: Data) throws -> [String: PreferenceValue] {
        var parser = Parser(bytes: Array(data))
        return try parser.parseDocument()
    }

    static func encode(_ values: [String: PreferenceValue]) throws -> Data {
        var writer = Writer()
        try writer.write(.dictionary(values), path: [])
        writer.output.append("\n")
        return Data(writer.output.utf8)
    }

    private struct Writer {
        var output = ""
        var indentation = ""

        mutating func write(_ value: PreferenceValue, path: [String]) throws {
            switch value {
            case .string(let string):
                writeString(string)
            case .int(let int):
                output += String(int)
            case .double(let double):
                guard double.isFinite else {
                    throw PreferencesFormatError(
                        reason: "the value at \"\(PreferenceKeyPath(path.isEmpty ? [""] : path))\" is \(double), "
                            + "which JSON cannot represent")
                }
                // Swift's shortest round-trip form always has a "." or an exponent, so it reads
                // back as a double.
                output += double.description
            case .bool(let bool):
                output += bool ? "true" : "false"
            case .null:
                output += "null"
            case .date(let date):
                output += "{"
                writeString(PreferencesJSON.dateKey)
                output += ": "
                writeString(PreferencesJSON.text(of: date))
                output += "}"
            case .data(let data):
                output += "{"
                writeString(PreferencesJSON.dataKey)
                output += ": "
                writeString(data.base64EncodedString())
                output += "}"
            case .array(let elements):
                guard !elements.isEmpty else {
                    output += "[]"
                    return
                }
                output += "["
                let outer = indentation
                indentation += "  "
                for (index, element) in elements.enumerated() {
                    output += (index == 0 ? "\n" : ",\n") + indentation
                    try write(element, path: path + ["[\(index)]"])
                }
                indentation = outer
                output += "\n" + indentation + "]"
            case .dictionary(let dictionary):
                guard !dictionary.isEmpty else {
                    output += "{}"
                    return
                }
                output += "{"
                let outer = indentation
                indentation += "  "
                for (index, key) in dictionary.keys.sorted().enumerated() {
                    output += (index == 0 ? "\n" : ",\n") + indentation
                    writeString(key)
                    output += ": "
                    try write(dictionary[key]!, path: path + [key])
                }
                indentation = outer
                output += "\n" + indentation + "}"
            }
        }

        mutating func writeString(_ string: String) {
            output += "\""
            for scalar in string.unicodeScalars {
                switch scalar {
                case "\"": output += "\\\""
                case "\\": output += "\\\\"
                case "\n": output += "\\n"
                case "\r": output += "\\r"
                case "\t": output += "\\t"
                case "\u{08}": output += "\\b"
                case "\u{0C}": output += "\\f"
                case let control where control.value < 0x20:
                    output += "\\u00" + (control.value < 0x10 ? "0" : "") + String(control.value, radix: 16)
                default: output.unicodeScalars.append(scalar)
                }
            }
            output += "\""
        }
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0
        var depth = 0
        static let maximumDepth = 512

        mutating func parseDocument() throws -> [String: PreferenceValue] {
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
            skipWhitespace()
            guard peek == UInt8(ascii: "{") else {
                throw failure(bytes.isEmpty ? "the file is empty" : "the top level is not a JSON object")
            }
            // The top level is the preferences themselves, never a tagged date or data: a file
            // whose only key is "$date" holds a string under that key.
            let values = try parseObject()
            skipWhitespace()
            guard index == bytes.count else { throw failure("unexpected text after the top-level object") }
            return values
        }

        private var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

        private mutating func skipWhitespace() {
            // Indexed directly: files are indented, and an optional per byte showed in a launch.
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x0A, 0x0D, 0x09: index += 1
                default: return
                }
            }
        }

        private mutating func parseValue() throws -> PreferenceValue {
            skipWhitespace()
            guard let byte = peek else { throw failure("the text ends where a value is expected") }
            switch byte {
            case UInt8(ascii: "{"):
                let dictionary = try parseObject()
                return Self.taggedValue(in: dictionary) ?? .dictionary(dictionary)
            case UInt8(ascii: "["): return try parseArray()
            case UInt8(ascii: "\""): return .string(try parseString())
            case UInt8(ascii: "t"):
                try expectLiteral("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try expectLiteral("false")
                return .bool(false)
            case UInt8(ascii: "n"):
                try expectLiteral("null")
                return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return try parseNumber()
            default:
                throw failure("unexpected character '\(Self.printable(byte))'")
            }
        }

        private mutating func enterContainer() throws {
            depth += 1
            if depth > Self.maximumDepth {
                throw failure("values are nested more than \(Self.maximumDepth) levels deep")
            }
            index += 1
        }

        private mutating func parseObject() throws -> [String: PreferenceValue] {
            try enterContainer()
            defer { depth -= 1 }
            var dictionary: [String: PreferenceValue] = [:]
            skipWhitespace()
            if peek == UInt8(ascii: "}") {
                index += 1
                return dictionary
            }
            while true {
                skipWhitespace()
                guard peek == UInt8(ascii: "\"") else { throw failure("expected a key in quotes") }
                let keyStart = index
                let key = try parseString()
                skipWhitespace()
                guard peek == UInt8(ascii: ":") else { throw failure("expected ':' after a key") }
                index += 1
                let value = try parseValue()
                if dictionary.updateValue(value, forKey: key) != nil {
                    index = keyStart
                    throw failure("the key \"\(key)\" appears twice in one object")
                }
                skipWhitespace()
                switch peek {
                case UInt8(ascii: ",")?: index += 1
                case UInt8(ascii: "}")?:
                    index += 1
                    return dictionary
                default: throw failure("expected ',' or '}' in an object")
                }
            }
        }

        private static func taggedValue(in dictionary: [String: PreferenceValue]) -> PreferenceValue? {
            guard dictionary.count == 1, let (key, value) = dictionary.first, case .string(let text) = value else {
                return nil
            }
            switch key {
            case PreferencesJSON.dateKey: return PreferencesJSON.date(from: text).map(PreferenceValue.date)
            case PreferencesJSON.dataKey: return Data(base64Encoded: text).map(PreferenceValue.data)
            default: return nil
            }
        }

        private mutating func parseArray() throws -> PreferenceValue {
            try enterContainer()
            defer { depth -= 1 }
            var elements: [PreferenceValue] = []
            skipWhitespace()
            if peek == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            while true {
                elements.append(try parseValue())
                skipWhitespace()
                switch peek {
                case UInt8(ascii: ",")?: index += 1
                case UInt8(ascii: "]")?:
                    index += 1
                    return .array(elements)
                default: throw failure("expected ',' or ']' in an array")
                }
            }
        }

        private mutating func parseString() throws -> String {
            let start = index
            index += 1
            // The usual key or value, ASCII without escapes, is made straight from the text's
            // bytes: ASCII is valid UTF-8 as it is, so nothing needs checking. (`String(bytes:
            // encoding:)` asks the runtime for three generic types per call on Linux.) Any other
            // string takes the way below from its start.
            var end = index
            while end < bytes.count {
                let byte = bytes[end]
                if byte == UInt8(ascii: "\"") {
                    let string = String(decoding: bytes[index..<end], as: UTF8.self)
                    index = end + 1
                    return string
                }
                if byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { break }
                end += 1
            }
            var utf8: [UInt8] = []
            while true {
                guard let byte = peek else {
                    index = start
                    throw failure("a string is not closed")
                }
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard let string = String(bytes: utf8, encoding: .utf8) else {
                        index = start
                        throw failure("a string is not valid UTF-8")
                    }
                    return string
                case UInt8(ascii: "\\"):
                    try parseEscape(into: &utf8)
                case 0..<0x20:
                    index -= 1
                    throw failure("a control character must be escaped inside a string")
                default:
                    utf8.append(byte)
                }
            }
        }

        private mutating func parseEscape(into utf8: inout [UInt8]) throws {
            guard let byte = peek else { throw failure("a string is not closed") }
            index += 1
            let simple: UInt8? = switch byte {
            case UInt8(ascii: "\""): UInt8(ascii: "\"")
            case UInt8(ascii: "\\"): UInt8(ascii: "\\")
            case UInt8(ascii: "/"): UInt8(ascii: "/")
            case UInt8(ascii: "b"): 0x08
            case UInt8(ascii: "f"): 0x0C
            case UInt8(ascii: "n"): 0x0A
            case UInt8(ascii: "r"): 0x0D
            case UInt8(ascii: "t"): 0x09
            default: nil
            }
            if let simple {
                utf8.append(simple)
                return
            }
            guard byte == UInt8(ascii: "u") else {
                index -= 2
                throw failure("unknown escape '\\\(Self.printable(byte))'")
            }
            var scalarValue = try parseHexQuad()
            if (0xD800...0xDBFF).contains(scalarValue) {
                guard bytes[index...].starts(with: Array("\\u".utf8)) else {
                    throw failure("a UTF-16 high surrogate is not followed by a low one")
                }
                index += 2
                let low = try parseHexQuad()
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw failure("a UTF-16 high surrogate is not followed by a low one")
                }
                scalarValue = 0x10000 + ((scalarValue - 0xD800) << 10) + (low - 0xDC00)
            }
            guard let scalar = Unicode.Scalar(scalarValue) else {
                throw failure("\\u escape \(String(scalarValue, radix: 16)) is a lone surrogate")
            }
            utf8.append(contentsOf: String(scalar).utf8)
        }

        private mutating func parseHexQuad() throws -> UInt32 {
            guard index + 4 <= bytes.count,
                  let value = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16)
            else { throw failure("\\u must be followed by four hexadecimal digits") }
            index += 4
            return value
        }

        private mutating func parseNumber() throws -> PreferenceValue {
            let start = index
            var isInteger = true
            if peek == UInt8(ascii: "-") { index += 1 }
            if peek == UInt8(ascii: "0") {
                index += 1
            } else if skipDigits() == 0 {
                throw failure("a number needs digits")
            }
            if peek == UInt8(ascii: ".") {
                isInteger = false
                index += 1
                if skipDigits() == 0 { throw failure("a number needs digits after '.'") }
            }
            if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
                isInteger = false
                index += 1
                if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
                if skipDigits() == 0 { throw failure("a number needs digits in its exponent") }
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            if isInteger {
                guard let value = Int(text) else {
                    index = start
                    throw failure("the integer \(text) does not fit in 64 bits")
                }
                return .int(value)
            }
            guard let value = Double(text), value.isFinite else {
                index = start
                throw failure("the number \(text) is too large for a Double")
            }
            return .double(value)
        }

        private mutating func skipDigits() -> Int {
            let start = index
            while let byte = peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
            return index - start
        }

        private mutating func expectLiteral(_ literal: String) throws {
            guard bytes[index...].starts(with: Array(literal.utf8)) else {
                throw failure("unexpected text; expected \(literal)")
            }
            index += literal.utf8.count
        }

        private func failure(_ reason: String) -> PreferencesFormatError {
            var line = 1, column = 1
            for byte in bytes[..<min(index, bytes.count)] {
                if byte == 0x0A {
                    line += 1
                    column = 1
                } else if byte & 0xC0 != 0x80 {
                    column += 1
                }
            }
            return PreferencesFormatError(reason: "\(reason) (line \(line), column \(column))")
        }

        private static func printable(_ byte: UInt8) -> String {
            (0x20..<0x7F).contains(byte) ? String(UnicodeScalar(byte)) : "\\u{\(String(byte, radix: 16))}"
        }
    }
}
