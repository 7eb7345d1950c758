import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

@Suite struct PreferencesTests {
    static let date = Date(timeIntervalSince1970: 1_700_000_000.25)

    /// One value of every kind, nested.
    static let everyKind = Preferences([
        "name": "Ada",
        "emptyString": "",
        "unicode": "naïve 🚀 \"quoted\" back\\slash\nnew line\t\u{01}",
        "count": 42,
        "negative": -7,
        "largest": .int(Int.max),
        "smallest": .int(Int.min),
        "ratio": 0.1,
        "whole": 3.0,
        "tiny": .double(.leastNonzeroMagnitude),
        "huge": 1e300,
        "negativeZero": .double(-0.0),
        "on": true,
        "off": false,
        "since": .date(date),
        "blob": .data(Data([0, 1, 2, 254, 255])),
        "emptyData": .data(Data()),
        "list": [1, "two", 3.5, false, [], [:]],
        "nested": ["inner": ["deep": "value", "when": .date(Date(timeIntervalSince1970: 0))]],
        "com.example.flag": true,
        "": "empty key",
    ])

    // MARK: Key paths

    @Test func aStringLiteralIsOneKeyAsWritten() {
        #expect(PreferenceKeyPath("com.example.showHelp").components == ["com.example.showHelp"])
        #expect(PreferenceKeyPath("com.example.showHelp").description == "com.example.showHelp")
        #expect(PreferenceKeyPath(#"a\.b"#).components == [#"a\.b"#])
    }

    @Test func parsedPathsSplitOnUnescapedDots() throws {
        #expect(try PreferenceKeyPath(parsing: "onboarding.showHelp").components == ["onboarding", "showHelp"])
        #expect(try PreferenceKeyPath(parsing: #"com\.example\.flag"#).components == ["com.example.flag"])
        #expect(try PreferenceKeyPath(parsing: #"a\\.b"#).components == [#"a\"#, "b"])
        #expect(PreferenceKeyPath(["a.b", "c"]).components == ["a.b", "c"])
        #expect(PreferenceKeyPath.key("x.y").components == ["x.y"])
        let path: PreferenceKeyPath = ["com.example.flag", #"back\slash"#]
        #expect(path.description == #"com\.example\.flag.back\\slash"#)
        #expect(try PreferenceKeyPath(parsing: path.description) == path)
    }

    @Test(arguments: ["", "a..b", ".a", "a.", #"a\b"#, #"a\"#])
    func invalidDottedPathsThrow(text: String) {
        #expect(throws: PreferencesError.self) { try PreferenceKeyPath(parsing: text) }
    }

    // MARK: Typed get and set

    @Test func typedGettersReadTheirKindAndConvertOnlyWithoutLoss() throws {
        let prefs = Self.everyKind
        #expect(prefs.string("name") == "Ada")
        #expect(prefs.int("count") == 42)
        #expect(prefs.int("whole") == 3)
        #expect(prefs.int("ratio") == nil)
        #expect(prefs.double("count") == 42)
        #expect(prefs.double("ratio") == 0.1)
        #expect(prefs.bool("on") == true)
        #expect(prefs.bool("count") == nil)
        #expect(prefs.int("on") == nil)
        #expect(prefs.date("since") == Self.date)
        #expect(prefs.data("blob") == Data([0, 1, 2, 254, 255]))
        #expect(prefs.string("count") == nil)
        #expect(prefs.array("list")?.count == 6)
        #expect(prefs.dictionary("nested")?.keys.sorted() == ["inner"])
        #expect(prefs.string(["nested", "inner", "deep"]) == "value")
        #expect(prefs.string("nested.inner.deep") == nil)
        #expect(prefs.bool(["com.example.flag"]) == true)
        #expect(prefs.string(.key("")) == "empty key")
        #expect(prefs.string("missing") == nil)
        #expect(prefs.string(["name", "child"]) == nil)
    }

    @Test func isoStringsReadAsDates() {
        let prefs = Preferences(["legacy": "2024-05-01T09:30:00Z", "precise": "2024-05-01T09:30:00.500Z"])
        #expect(prefs.date("legacy") == Date(timeIntervalSince1970: 1_714_555_800))
        #expect(prefs.date("precise") == Date(timeIntervalSince1970: 1_714_555_800.5))
        #expect(Preferences(["x": "tomorrow"]).date("x") == nil)
    }

    @Test func setStoresEveryKindAndCreatesParents() throws {
        var prefs = Preferences()
        try prefs.set("x", for: "name")
        try prefs.set(3, for: "count")
        try prefs.set(2.5, for: "scale")
        try prefs.set(true, for: "flag")
        try prefs.set(Self.date, for: "when")
        try prefs.set(Data([9]), for: "bytes")
        try prefs.set(["a", "b"], for: "tags")
        try prefs.set(["w": 800, "h": 600], for: ["window", "size"])
        try prefs.set([1, "two"] as PreferenceValue, for: "mixed")

        #expect(prefs.values == [
            "name": "x", "count": 3, "scale": 2.5, "flag": true, "when": .date(Self.date),
            "bytes": .data(Data([9])), "tags": ["a", "b"], "window": ["size": ["w": 800, "h": 600]],
            "mixed": [1, "two"],
        ])
        #expect(prefs.value("tags", as: [String].self) == ["a", "b"])
        #expect(prefs.value(["window", "size"], as: [String: Int].self) == ["w": 800, "h": 600])
        #expect(prefs.value("mixed", as: [String].self) == nil)
        #expect(prefs.keys == ["bytes", "count", "flag", "mixed", "name", "scale", "tags", "when", "window"])
        #expect(prefs.contains(["window", "size", "w"]))
        #expect(!prefs.contains(["window", "size", "d"]))
        #expect(!prefs.contains("window.size"))
    }

    @Test func setThroughANonDictionaryThrowsAndChangesNothing() throws {
        var prefs = Preferences(["a": ["b": 1]])
        let before = prefs
        let error = #expect(throws: PreferencesError.self) { try prefs.set("x", for: ["a", "b", "c"]) }
        #expect(error == .notADictionary(path: ["a", "b", "c"], blockingPath: ["a", "b"], found: "an integer"))
        #expect(error?.description.contains("\"a.b\" holds an integer") == true)
        #expect(prefs == before)
    }

    @Test func removeValueReturnsTheValueAndKeepsParents() {
        var prefs = Preferences(["a": ["b": 1], "c": 2])
        #expect(prefs.removeValue(for: "a.b") == nil)
        #expect(prefs.removeValue(for: ["a", "b"]) == 1)
        #expect(prefs.values == ["a": [:], "c": 2])
        #expect(prefs.removeValue(for: "c") == 2)
        #expect(prefs.removeValue(for: "c") == nil)
        #expect(prefs.removeValue(for: ["x", "y", "z"]) == nil)
        #expect(prefs.values == ["a": [:]])
    }

    // MARK: Rename

    @Test func renameMovesAValueAcrossDictionaries() throws {
        var prefs = Preferences(["showHelp": false, "onboarding": ["seen": true]])
        #expect(try prefs.renameKey("showHelp", to: ["onboarding", "showHelp"]))
        #expect(prefs.values == ["onboarding": ["seen": true, "showHelp": false]])
        #expect(try prefs.renameKey(["onboarding", "seen"], to: "seenOnboarding"))
        #expect(prefs.values == ["onboarding": ["showHelp": false], "seenOnboarding": true])
    }

    @Test func renameOfAnAbsentKeyIsANoOp() throws {
        var prefs = Preferences(["a": 1])
        #expect(try prefs.renameKey("missing", to: "a") == false)
        #expect(try prefs.renameKey(["missing", "deeper"], to: "b") == false)
        #expect(prefs.values == ["a": 1])
        #expect(prefs.takeStepNotes() == [
            #"renameKey found no value at "missing"; nothing was moved to "a""#,
            #"renameKey found no value at "missing.deeper"; nothing was moved to "b""#,
        ])
        #expect(prefs.takeStepNotes().isEmpty)
    }

    /// A reverse-DNS key is the key the user wrote, as in `UserDefaults`, not a path.
    @Test func renameOfADottedKeyMovesThatKey() throws {
        var prefs = Preferences(["com.example.showHelp": true])
        #expect(try prefs.renameKey("com.example.showHelp", to: "onboarding.showHelp"))
        #expect(prefs.values == ["onboarding.showHelp": true])
        #expect(prefs.bool("onboarding.showHelp") == true)
        #expect(prefs.takeStepNotes().isEmpty)
    }

    @Test func renameOntoAnExistingKeyThrowsAndChangesNothing() throws {
        var prefs = Preferences(["old": 1, "new": 2])
        let error = #expect(throws: PreferencesError.self) { try prefs.renameKey("old", to: "new") }
        #expect(error == .destinationExists(source: "old", destination: "new"))
        #expect(prefs.values == ["old": 1, "new": 2])
    }

    @Test func renameIntoItsOwnFormerPlace() throws {
        var prefs = Preferences(["showHelp": true])
        try prefs.renameKey("showHelp", to: ["showHelp", "enabled"])
        #expect(prefs.values == ["showHelp": ["enabled": true]])
        #expect(try prefs.renameKey("showHelp", to: "showHelp"))
        #expect(prefs.values == ["showHelp": ["enabled": true]])
    }

    @Test func renameThroughANonDictionaryThrowsAndChangesNothing() throws {
        var prefs = Preferences(["a": 1, "b": "text"])
        #expect(throws: PreferencesError.self) { try prefs.renameKey("a", to: ["b", "a"]) }
        #expect(prefs.values == ["a": 1, "b": "text"])
    }

    // MARK: JSON

    @Test func jsonRoundTripKeepsEveryKind() throws {
        let data = try PreferencesJSON.encode(Self.everyKind.values)
        #expect(try PreferencesJSON.decode(data) == Self.everyKind.values)
    }

    @Test func jsonIsIndentedSortedAndTagsDatesAndData() throws {
        let data = try PreferencesJSON.encode([
            "b": 1, "a": ["whole": 2.0, "list": [true]], "when": .date(Self.date), "bytes": .data(Data([1, 2])),
            "empty": [:],
        ])
        #expect(String(decoding: data, as: UTF8.self) == """
            {
              "a": {
                "list": [
                  true
                ],
                "whole": 2.0
              },
              "b": 1,
              "bytes": {"$data": "AQI="},
              "empty": {},
              "when": {"$date": "2023-11-14T22:13:20.250Z"}
            }

            """)
    }

    @Test(arguments: [1_547_072_183.936, 397_357_645.306, 1_705_805_356.261, -1.001, 0.9995])
    func jsonDatesSurviveBeingRewrittenToTheMillisecond(seconds: Double) throws {
        var values: [String: PreferenceValue] = ["d": .date(Date(timeIntervalSince1970: seconds))]
        let first = try PreferencesJSON.encode(values)
        for _ in 0..<3 {
            values = try PreferencesJSON.decode(try PreferencesJSON.encode(values))
        }
        #expect(try PreferencesJSON.encode(values) == first)
        guard case .date(let date) = values["d"] else {
            Issue.record("not a date: \(values)")
            return
        }
        #expect((date.timeIntervalSince1970 * 1_000).rounded() == (seconds * 1_000).rounded())
    }

    /// Such a file used to stop the app: its top level was read as a date or data, not as the
    /// dictionary of preferences, and a precondition failed.
    @Test(arguments: [("$date", "2024-05-01T09:30:00.000Z"), ("$data", "AAAA")])
    func aFileWhoseOnlyKeyLooksLikeATagReadsAsPreferences(key: String, text: String) throws {
        let values: [String: PreferenceValue] = [key: .string(text)]
        #expect(try PreferencesJSON.decode(try PreferencesJSON.encode(values)) == values)
        // Below the top level, the same object is the tagged value, as documented.
        let nested = try PreferencesJSON.decode(Data("{\"a\": {\"\(key)\": \"\(text)\"}}".utf8))
        let tagged: PreferenceValue = key == "$date" ? .date(Date(iso8601: text)!) : .data(Data(base64Encoded: text)!)
        #expect(nested["a"] == tagged)
    }

    /// A damaged binary property list whose top object became a set: Foundation's parser
    /// crashed the process on it.
    @Test func aPropertyListHoldingASetIsATypedErrorNotACrash() throws {
        let damaged = try #require(Data(base64Encoded:
            "YnBsaXN0MDDBAQJoACIAIAAg2D3eAABiAH0A32bYPd4AECIAMADpAAMICxwAAAAAAAABAQAAAAAAAAADAAAAAAAAAAAAAAAAAAAAKQ=="))
        let error = #expect(throws: PreferencesFormatError.self) { try PreferencesPropertyList.decode(damaged) }
        #expect(error?.reason == "the property list holds a set (object 0 at byte 8), which preferences cannot hold")
    }

    @Test func jsonReadsForeignFiles() throws {
        let text = """
            \u{FEFF} { "int": 1, "double": 1.0, "exp": 1e3, "neg": -0.5, "bool": true, "str": "a\\u00e9\\ud83d\\ude80\\/",
              "arr": [ ], "obj": {"$date": "not a date"}, "date": {"$date": "2024-05-01T09:30:00Z"},
              "two": {"$date": "2024-05-01T09:30:00Z", "other": 1} }
            """
        let values = try PreferencesJSON.decode(Data(text.utf8))
        #expect(values == [
            "int": 1, "double": 1.0, "exp": 1000.0, "neg": -0.5, "bool": true, "str": "aé🚀/", "arr": [],
            "obj": ["$date": "not a date"], "date": .date(Date(timeIntervalSince1970: 1_714_555_800)),
            "two": ["$date": "2024-05-01T09:30:00Z", "other": 1],
        ])
        if case .double = values["double"] {} else { Issue.record("1.0 must read as a double") }
    }

    @Test(arguments: [
        "", "   ", "[1, 2]", "\"text\"", "{", "{\"a\": 1", "{\"a\": 1,}", "{\"a\" 1}", "{\"a\": nul}",
"{\"a\": 01}", "{\"a\": 1.}", "{\"a\": .5}", "{\"a\": 1e}", "{\"a\": +1}",
        "{\"a\": 99999999999999999999}", "{\"a\": 1e999}", "{\"a\": \"x\ny\"}", "{\"a\": \"\\x\"}",
        "{\"a\": \"\\ud83d\"}", "{\"a\": 1, \"a\": 2}", "{\"a\": 1} extra", "{'a': 1}", "{\"a\": tru}",
    ])
    func jsonRejectsInvalidText(text: String) {
        #expect(throws: PreferencesFormatError.self) { try PreferencesJSON.decode(Data(text.utf8)) }
    }

    @Test func jsonRejectsInvalidUTF8AndDeepNesting() {
        #expect(throws: PreferencesFormatError.self) {
            try PreferencesJSON.decode(Data([0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D]))
        }
        let deep = "{\"a\": " + String(repeating: "[", count: 600) + String(repeating: "]", count: 600) + "}"
        #expect(throws: PreferencesFormatError.self) { try PreferencesJSON.decode(Data(deep.utf8)) }
    }

    @Test func jsonErrorsGiveTheirPosition() {
        let error = #expect(throws: PreferencesFormatError.self) {
            try PreferencesJSON.decode(Data("{\n  \"a\": nul\n}".utf8))
        }
        #expect(error?.reason.contains("line 2, column 8") == true)
    }

    @Test func jsonNullIsAValueThatRoundTrips() throws {
        let text = #"{"a": null, "list": [1, null], "nested": {"n": null}}"#
        let values = try PreferencesJSON.decode(Data(text.utf8))
        #expect(values == ["a": .null, "list": [1, .null], "nested": ["n": .null]])
        let written = String(decoding: try PreferencesJSON.encode(values), as: UTF8.self)
        #expect(written == """
            {
              "a": null,
              "list": [
                1,
                null
              ],
              "nested": {
                "n": null
              }
            }

            """)
        #expect(try PreferencesJSON.decode(Data(written.utf8)) == values)
        var prefs = Preferences(values)
        #expect(prefs["a"] == .null)
        #expect(prefs.contains(["nested", "n"]))
        #expect(prefs.string("a") == nil)
        try prefs.set(PreferenceValue.null, for: "b")
        try prefs.renameKey("a", to: "c")
        #expect(prefs.values == ["b": .null, "c": .null, "list": [1, .null], "nested": ["n": .null]])
    }

    /// Dates finer than a millisecond (written by other tools) are written back as they were read,
    /// not rounded to the millisecond at every rewrite.
    @Test(arguments: [
        "2024-05-01T09:30:00.000Z", "2024-05-01T09:30:00.123Z", "2024-05-01T09:30:00.123456Z",
        "2024-05-01T09:30:00.999999Z", "1969-12-31T23:59:59.500Z", "2024-05-01T09:30:00.000001Z",
    ])
    func jsonDatesKeepTheirPrecisionThroughRewrites(text: String) throws {
        let file = "{\n  \"d\": {\"$date\": \"\(text)\"}\n}\n"
        var data = Data(file.utf8)
        for _ in 0..<3 {
            data = try PreferencesJSON.encode(try PreferencesJSON.decode(data))
        }
        #expect(String(decoding: data, as: UTF8.self) == file)
    }

    @Test func jsonNumbersKeepTheirKind() throws {
        let values = try PreferencesJSON.decode(Data(#"{"f": 1.0, "i": 1, "e": 1.5e3, "n": -0.0, "big": 1e300}"#.utf8))
        #expect(values == ["f": .double(1), "i": .int(1), "e": .double(1500), "n": .double(-0.0), "big": .double(1e300)])
        let text = String(decoding: try PreferencesJSON.encode(values), as: UTF8.self)
        #expect(text.contains(#""f": 1.0,"#))
        #expect(text.contains(#""i": 1,"#))
        #expect(text.contains(#""e": 1500.0,"#))
        #expect(try PreferencesJSON.decode(Data(text.utf8)) == values)
    }

    @Test func jsonCannotHoldNonFiniteNumbers() {
        let error = #expect(throws: PreferencesFormatError.self) {
            try PreferencesJSON.encode(["a": ["b": .double(.nan)]])
        }
        #expect(error?.reason.contains("\"a.b\"") == true)
        #expect(throws: PreferencesFormatError.self) { try PreferencesJSON.encode(["x": .double(.infinity)]) }
    }

    // MARK: Property lists

    @Test func propertyListRoundTripKeepsEveryKind() throws {
        let data = try PreferencesPropertyList.encode(Self.everyKind.values)
        #expect(data.starts(with: Array("bplist".utf8)))
        #expect(try PreferencesPropertyList.decode(data) == Self.everyKind.values)
    }

    @Test func propertyListReadsXML() throws {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0"><dict>
              <key>flag</key><true/><key>zero</key><integer>0</integer><key>one</key><integer>1</integer>
              <key>real</key><real>1</real><key>when</key><date>2024-05-01T09:30:00Z</date>
              <key>bytes</key><data>AQI=</data><key>nested</key><dict><key>list</key><array><string>a</string><false/></array></dict>
            </dict></plist>
            """
        #expect(try PreferencesPropertyList.decode(Data(xml.utf8)) == [
            "flag": true, "zero": 0, "one": 1, "real": 1.0, "when": .date(Date(timeIntervalSince1970: 1_714_555_800)),
            "bytes": .data(Data([1, 2])), "nested": ["list": ["a", false]],
        ])
    }

    @Test func propertyListsCannotHoldNullAndNameItsKey() throws {
        #expect(throws: PreferencesPropertyList.NullValue(path: ["a", "list", "[1]"])) {
            try PreferencesPropertyList.encode(["a": ["list": [1, .null]]])
        }
    }

    @Test func propertyListsTellTheFormatTheyWereReadIn() throws {
        let values: [String: PreferenceValue] = ["a": 1, "b": ["c": "d"]]
        for format in [PropertyListSerialization.PropertyListFormat.xml, .binary] {
            let data = try PreferencesPropertyList.encode(values, format: format)
            let read = try PreferencesPropertyList.decodeKeepingFormat(data)
            #expect(read.values == values)
            #expect(read.format == format)
        }
    }

    @Test func propertyListKeepsNaN() throws {
        let data = try PreferencesPropertyList.encode(["x": .double(.nan)])
        guard case .double(let value)? = try PreferencesPropertyList.decode(data)["x"] else {
            Issue.record("NaN must read back as a double")
            return
        }
        #expect(value.isNaN)
    }

    @Test(arguments: ["", "garbage{", "<plist><array/></plist>", "bplist00\u{01}"])
    func propertyListRejectsInvalidData(text: String) {
        #expect(throws: PreferencesFormatError.self) { try PreferencesPropertyList.decode(Data(text.utf8)) }
    }
}
