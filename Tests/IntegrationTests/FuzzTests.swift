import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// Seeded fuzzing of the parsers that read what is on disk: versions (levels) and preferences
/// files. Every input must give a value or a typed error, never a crash or a hang.
/// `STORE_MIGRATIONS_FUZZ_ITERATIONS` sets the inputs per test (2,000 by default) and
/// `STORE_MIGRATIONS_FUZZ_SEED` replays a failing seed.
@Suite struct FuzzTests {
    static let iterations = environmentCount("STORE_MIGRATIONS_FUZZ_ITERATIONS", default: 2_000)

    // MARK: Versions

    /// The grammar `N(.N)*(-S)?` over ASCII digits, written independently of the parser.
    static func isVersion(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count <= 2 else { return false }
        func isNumber(_ part: Substring) -> Bool { !part.isEmpty && part.utf8.allSatisfy { (48...57).contains($0) } }
        if parts.count == 2, !isNumber(parts[1]) { return false }
        return parts[0].split(separator: ".", omittingEmptySubsequences: false).allSatisfy(isNumber)
    }

    /// Orders valid version texts independently of ``Version``: components compared as numbers
    /// of any length, missing ones zero; no sub-migration < `-0` < `-1` < ….
    static func referenceCompare(_ a: String, _ b: String) -> Int {
        func number(_ digits: Substring) -> String { String(digits.drop { $0 == "0" }) }
        func compareNumbers(_ x: String, _ y: String) -> Int {
            x.count != y.count ? (x.count < y.count ? -1 : 1) : (x == y ? 0 : (x < y ? -1 : 1))
        }
        func split(_ text: String) -> ([String], String?) {
            let parts = text.split(separator: "-", omittingEmptySubsequences: false)
            return (parts[0].split(separator: ".").map(number), parts.count == 2 ? number(parts[1]) : nil)
        }
        let (left, leftSub) = split(a), (right, rightSub) = split(b)
        for index in 0..<max(left.count, right.count) {
            let order = compareNumbers(index < left.count ? left[index] : "", index < right.count ? right[index] : "")
            if order != 0 { return order }
        }
        switch (leftSub, rightSub) {
        case (nil, nil): return 0
        case (nil, _): return -1
        case (_, nil): return 1
        case let (l?, r?): return compareNumbers(l, r)
        }
    }

    static func randomVersionText(_ random: inout SeededGenerator) -> String {
        let pieces = ["0", "1", "2", "9", "10", "00", "007", "4294967295", "4294967296", "18446744073709551616",
                      ".", ".", "-", "a", " ", "+", "١", "０", "é", "\u{0}", ""]
        if Bool.random(using: &random) {
            // Mostly well-formed, to reach deep into the grammar and the ordering.
            var text = (0..<Int.random(in: 1...6, using: &random)).map { _ in
                String(Int.random(in: 0...20, using: &random))
            }.joined(separator: ".")
            if Bool.random(using: &random) { text += "-" + String(Int.random(in: 0...3, using: &random)) }
            if Int.random(in: 0..<4, using: &random) == 0 {
                var characters = Array(text)
                let index = Int.random(in: 0...characters.count, using: &random)
                characters.insert(contentsOf: pieces.randomElement(using: &random)!, at: index)
                text = String(characters)
            }
            return text
        }
        return (0..<Int.random(in: 0...8, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
    }

    @Test(.timeLimit(.minutes(5)))
    func versionParsingAgreesWithTheGrammarAndOrdering() {
        let seed = environmentSeed("STORE_MIGRATIONS_FUZZ_SEED")
        var random = SeededGenerator(seed: seed)
        var parsed: [(String, Version)] = []
        for _ in 0..<Self.iterations {
            let text = Self.randomVersionText(&random)
            do {
                let version = try Version(parsing: text)
                #expect(Self.isVersion(text), "seed \(seed): \"\(text)\" parsed as \(version)")
                #expect(version.description == text, "seed \(seed)")
                #expect(try Version(parsing: version.description) == version, "seed \(seed): \"\(text)\"")
                parsed.append((text, version))
            } catch let error as VersionError {
                #expect(!Self.isVersion(text), "seed \(seed): \"\(text)\" rejected: \(error)")
                #expect(error.text == text)
            } catch {
                Issue.record("seed \(seed): \"\(text)\" threw \(error), not a VersionError")
            }
        }
        #expect(parsed.count > Self.iterations / 4, "seed \(seed): too few valid versions to check the ordering")
        for index in parsed.indices {
            let (text, version) = parsed[index]
            let (otherText, other) = parsed[(index * 7 + 1) % parsed.count]
            let expected = Self.referenceCompare(text, otherText)
            #expect((version < other, version == other, version > other) == (expected < 0, expected == 0, expected > 0),
                    "seed \(seed): \(text) vs \(otherText)")
            #expect((version.hashValue == other.hashValue) || version != other, "seed \(seed): equal versions hash alike")
        }
    }

    // MARK: Preferences files

    static func randomValue(_ random: inout SeededGenerator, depth: Int = 0) -> PreferenceValue {
        switch Int.random(in: 0..<(depth < 3 ? 8 : 6), using: &random) {
        case 0: return .string(randomString(&random))
        case 1: return .int(Int.random(in: Int.min...Int.max, using: &random) >> Int.random(in: 0...63, using: &random))
        case 2: return .double(Double.random(in: -1e12...1e12, using: &random))
        case 3: return .bool(Bool.random(using: &random))
        // JSON keeps dates to the millisecond.
        case 4: return .date(Date(timeIntervalSince1970: Double(Int.random(in: 0...4_000_000_000_000, using: &random)) / 1_000))
        case 5: return .data(Data((0..<Int.random(in: 0...16, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }))
        case 6: return .array((0..<Int.random(in: 0...4, using: &random)).map { _ in randomValue(&random, depth: depth + 1) })
        default: return .dictionary(randomDictionary(&random, depth: depth + 1))
        }
    }

    static func randomDictionary(_ random: inout SeededGenerator, depth: Int = 0) -> [String: PreferenceValue] {
        var values: [String: PreferenceValue] = [:]
        for _ in 0..<Int.random(in: 0...5, using: &random) {
            values[randomString(&random)] = randomValue(&random, depth: depth)
        }
        return values
    }

    static func randomString(_ random: inout SeededGenerator) -> String {
        let characters: [Character] = ["a", "b", "Z", "0", " ", ".", "\"", "\\", "/", "\n", "\t", "\u{1}", "é", "ß", "😀", "$", "{", "}"]
        return String((0..<Int.random(in: 0...8, using: &random)).map { _ in characters.randomElement(using: &random)! })
    }

    /// `data` damaged the way disks and half-finished writers damage files.
    static func mutate(_ data: Data, _ random: inout SeededGenerator, tokens: [String]) -> Data {
        var bytes = [UInt8](data)
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            let position = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<6, using: &random) {
            case 0 where !bytes.isEmpty: bytes[position] = UInt8.random(in: 0...255, using: &random)
            case 1 where !bytes.isEmpty: bytes[position] ^= 1 << UInt8.random(in: 0...7, using: &random)
            case 2: bytes.removeSubrange(position..<min(bytes.count, position + Int.random(in: 1...8, using: &random)))
            case 3: bytes.insert(contentsOf: Array(tokens.randomElement(using: &random)!.utf8), at: position)
            case 4: bytes = Array(bytes.prefix(position))
            default:
                let end = min(bytes.count, position + Int.random(in: 1...32, using: &random))
                bytes.insert(contentsOf: bytes[position..<end], at: position)
            }
        }
        return Data(bytes)
    }

    /// Equality that takes NaN for NaN, as a damaged property list may hold one, and dates to
    /// the millisecond, as JSON keeps them (the text `.123` reads back as the nearest `Date`, not
    /// always the one that was written).
    static func same(_ a: PreferenceValue, _ b: PreferenceValue) -> Bool {
        switch (a, b) {
        case let (.double(x), .double(y)): return x == y || (x.isNaN && y.isNaN)
        case let (.date(x), .date(y)):
            let (a, b) = (x.timeIntervalSince1970, y.timeIntervalSince1970)
            return a == b || (a * 1_000).rounded() == (b * 1_000).rounded() || (a.isNaN && b.isNaN)
        case let (.array(x), .array(y)): return x.count == y.count && zip(x, y).allSatisfy(same)
        case let (.dictionary(x), .dictionary(y)):
            return x.count == y.count && x.allSatisfy { key, value in y[key].map { same(value, $0) } ?? false }
        default: return a == b
        }
    }

    /// Decodes `data` with `decode`; a value that comes out must survive being written and read
    /// again, since a migration writes back what it read.
    static func check(
        _ data: Data, seed: UInt64, format: String,
        decode: (Data) throws -> [String: PreferenceValue], encode: ([String: PreferenceValue]) throws -> Data
    ) -> Bool {
        let values: [String: PreferenceValue]
        do {
            values = try decode(data)
        } catch is PreferencesFormatError {
            return false
        } catch {
            Issue.record("seed \(seed): \(format) input \(data.base64EncodedString()) threw \(error), not a PreferencesFormatError")
            return false
        }
        do {
            let again = try decode(try encode(values))
            // Computed apart: on failure the expectation would print the values, and printing a
            // date far out of range traps in Foundation.
            let survived = same(.dictionary(again), .dictionary(values))
            #expect(survived, "seed \(seed): \(format) input \(data.base64EncodedString())")
        } catch let error as PreferencesFormatError {
            // JSON cannot write what it cannot hold; a property list holds everything it reads.
            #expect(format == "JSON" && error.reason.contains("JSON cannot represent"),
                    "seed \(seed): \(format) input \(data.base64EncodedString()) read but not written: \(error.reason)")
        } catch {
            Issue.record("seed \(seed): \(format) round trip threw \(error)")
        }
        return true
    }

    @Test(.timeLimit(.minutes(5)))
    func theJSONDecoderGivesAValueOrATypedError() throws {
        let seed = environmentSeed("STORE_MIGRATIONS_FUZZ_SEED")
        var random = SeededGenerator(seed: seed)
        let tokens = ["{", "}", "[", "]", "\"", ":", ",", "null", "true", "1e999", "-0", "\\u", "\\ud83d", "$date", "$data", "\u{FF}", " "]
        var accepted = 0
        for iteration in 0..<Self.iterations {
            let valid = try PreferencesJSON.encode(Self.randomDictionary(&random))
            let input: Data
            switch iteration % 4 {
            case 0: input = valid
            case 1, 2: input = Self.mutate(valid, &random, tokens: tokens)
            default:
                input = Data((0..<Int.random(in: 0...40, using: &random)).flatMap { _ in
                    Array(tokens.randomElement(using: &random)!.utf8)
                })
            }
            if Self.check(input, seed: seed, format: "JSON", decode: PreferencesJSON.decode, encode: PreferencesJSON.encode) {
                accepted += 1
            }
        }
        #expect(accepted >= Self.iterations / 4, "seed \(seed): every unmutated document must read back")
        // Nesting far past the limit is refused without exhausting the stack.
        let deep = Data((String(repeating: "{\"a\":[", count: 100_000)).utf8)
        #expect(throws: PreferencesFormatError.self) { try PreferencesJSON.decode(deep) }
    }

    @Test(.timeLimit(.minutes(5)))
    func thePropertyListDecoderGivesAValueOrATypedError() throws {
        let seed = environmentSeed("STORE_MIGRATIONS_FUZZ_SEED")
        var random = SeededGenerator(seed: seed)
        let tokens = ["bplist00", "<dict>", "</dict>", "<key>", "<integer>", "<real>", "<array/>", "\u{0}", "\u{FF}", "\u{D0}", "\u{5F}"]
        var accepted = 0
        for iteration in 0..<Self.iterations {
            let values = Self.randomDictionary(&random)
            let binary = try PreferencesPropertyList.encode(values)
            let input: Data
            switch iteration % 5 {
            case 0: input = binary
            case 1, 2: input = Self.mutate(binary, &random, tokens: tokens)
            case 3:
                let xml = try PropertyListSerialization.data(
                    fromPropertyList: PropertyListSerialization.propertyList(from: binary, format: nil), format: .xml, options: 0)
                input = Self.mutate(xml, &random, tokens: tokens)
            default:
                input = Data("bplist00".utf8) + Data((0..<Int.random(in: 0...64, using: &random)).map { _ in
                    UInt8.random(in: 0...255, using: &random)
                })
            }
            if Self.check(input, seed: seed, format: "property list",
                          decode: PreferencesPropertyList.decode, encode: PreferencesPropertyList.encode) {
                accepted += 1
            }
        }
        #expect(accepted >= Self.iterations / 5, "seed \(seed): every unmutated property list must read back")
    }

    // MARK: Regressions found by the libFuzzer targets (Tests/Fuzz)

    /// An unclosed quoted name lost its last character (`` `J\u{3} `` read as `J`): the end of the
    /// text was taken for its closing quote.
    @Test func anUnclosedQuotedNameKeepsItsLastCharacter() {
        for (sql, name) in [("`J\u{3}", "J\u{3}"), ("\"ab", "ab"), ("[ab", "ab"), ("\"a\"\"", "a\""), ("\"a\"", "a"), ("[a]", "a")] {
            let tokens = SQLTokenizer(sql).tokens()
            #expect(tokens.map(\.kind) == [.identifier(quoted: true)], "\(sql.debugDescription)")
            #expect(tokens.first?.value == name, "\(sql.debugDescription)")
        }
    }

    /// A doubled quote that a combining mark follows stayed doubled in the name: Foundation's
    /// `replacingOccurrences` compares characters, and `"` with a mark is another character.
    @Test func aDoubledQuoteBeforeACombiningMarkIsUnescaped() {
        #expect(SQLTokenizer("\"\"\"\u{616}c\"").tokens().map(\.value) == ["\"\u{616}c"])
    }

    /// The same cause in `DatabaseValue.sqlLiteral` (found reading the code after the finding
    /// above): a `'` before a combining mark was not doubled, which ended the literal early.
    @Test func aTextLiteralDoublesAQuoteBeforeACombiningMark() throws {
        let literal = DatabaseValue.text("it'\u{301}s'").sqlLiteral
        #expect(literal == "'it''\u{301}s'''")
        let db = try Database(path: ":memory:", busyTimeout: 0)
        #expect(try db.scalar("SELECT " + literal, as: String.self) == "it'\u{301}s'")
    }

    /// A quote or a backslash that a combining mark follows is escaped wherever the library
    /// quotes a name or a text: SQLite identifiers (PostgreSQL's: `PostgreSQLConnectionTests`),
    /// preference key paths, the plan's Graphviz labels.
    @Test func everyQuotingEscapesAQuoteBeforeACombiningMark() throws {
        let name = "a\"\u{301}b"
        #expect(Database.quoted(name) == "\"a\"\"\u{301}b\"")
        let db = try Database(path: ":memory:", busyTimeout: 0)
        try db.execute("CREATE TABLE \(Database.quoted(name)) (x)")
        #expect(try db.scalar("SELECT name FROM sqlite_schema", as: String.self) == name)

        let key = "v.\u{301}1\\\u{301}"
        let path = PreferenceKeyPath([key, "b"])
        #expect(path.description == "v\\.\u{301}1\\\\\u{301}.b")
        #expect(try PreferenceKeyPath(parsing: path.description) == path)

        #expect("x\"\u{301}\\\u{301}".escapingASCII("\\\"", with: "\\") == "x\\\"\u{301}\\\\\u{301}")
        #expect("it''\u{301}s".undoublingASCII("'") == "it'\u{301}s")
    }

    /// A text column default with a doubled quote before a combining mark reads back as written.
    @Test func aColumnDefaultUndoublesAQuoteBeforeACombiningMark() throws {
        let db = try Database(path: ":memory:", busyTimeout: 0)
        try db.execute("CREATE TABLE t (x TEXT DEFAULT 'it''\u{301}s', y TEXT DEFAULT '\u{301}y')")
        let columns = try #require(try db.schema().table(named: "t")?.columns)
        #expect(columns.map(\.defaultValue?.value) == [.text("it'\u{301}s"), .text("\u{301}y")])
    }

    /// An OpenStep text property list (white space alone parses as one) is refused when read:
    /// Foundation cannot write that format, and a store writing it back trapped.
    @Test func anOpenStepPropertyListIsRefusedWithAReason() {
        for (text, reason) in [
            ("\n", "the file holds only white space"),
            ("{ a = b; }", "the file is an OpenStep text property list, which cannot be written back; convert it to XML first (plutil -convert xml1)"),
        ] {
            #expect(throws: PreferencesFormatError.self) { try PreferencesPropertyList.decodeKeepingFormat(Data(text.utf8)) }
            do {
                _ = try PreferencesPropertyList.decodeKeepingFormat(Data(text.utf8))
            } catch let error as PreferencesFormatError {
                #expect(error.reason == reason)
            } catch {
                Issue.record("threw \(error)")
            }
        }
    }
}
