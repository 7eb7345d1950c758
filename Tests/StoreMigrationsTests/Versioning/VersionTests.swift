import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

@Suite struct VersionTests {
    typealias Store = InMemoryStore<[String]>

    @Test func sortsSubMigrationsBetweenTheirVersionAndTheNext() {
        let expected: [Version] = ["1.1", "1.1-0", "1.1-1", "1.1-2", "1.1.1", "1.2"]
        #expect(expected.shuffled().sorted() == expected)
        for (lower, higher) in zip(expected, expected.dropFirst()) {
            #expect(lower < higher, "\(lower) < \(higher)")
            #expect(!(higher < lower))
        }
    }

    @Test func comparesComponentsAsNumbers() {
        #expect(Version("1.10") > Version("1.9"))
        #expect(Version("2") > Version("1.999.999"))
        #expect(Version("10") > Version("9"))
        #expect(Version("1.1-10") > Version("1.1-9"))
    }

    @Test func missingTrailingComponentsCountAsZero() {
        #expect(Version("1.0") == Version("1"))
        #expect(Version("1.0") == Version("1.0.0"))
        #expect(Version("1.0-1") == Version("1-1"))
        #expect(Set<Version>(["1", "1.0", "1.0.0"]).count == 1)
        #expect(Version("1.0.1") > Version("1"))
    }

    @Test(arguments: ["7", "1.2", "1.0.3", "0.0.0.7", "1.2.3.4", "10.20.30.40-5", "1.2-0", "1.0.3-12", "4294967295.1"])
    func aCompactVersionWrittenNormalizedIsDescribedAsWritten(_ text: String) throws {
        #expect(try Version(parsing: text).description == text)
    }

    @Test func handlesComponentsOfAnyLength() throws {
        let huge = try Version(parsing: "123456789012345678901234567890.1")
        #expect(huge > Version("99999999999999999999.9"))
        #expect(huge == (try Version(parsing: "000123456789012345678901234567890.1.0")))
        #expect(try Version(parsing: "007").description == "007")
    }

    @Test(arguments: ["1b", "1.1a", "1.3.1rc1", "1.9.a", "", "-1", "1..2", ".1", "1.", "1-", "1-2-3", "1-a", " 1", "1 ", "v1", "١"])
    func rejectsInvalidTextQuotingIt(_ text: String) {
        #expect {
            try Version(parsing: text)
        } throws: { error in
            guard let error = error as? VersionError else { return false }
            return error.text == text && error.description.hasPrefix("\"\(text)\" is not a version:")
        }
        #expect(Version(text) == nil)
    }

    // MARK: A literal that is not a version

    /// Swift reads `Version("v2")` with a literal as the literal `"v2" as Version`, whatever
    /// initializers exist: a typo there must not crash, and text in a `String` still gives `nil`.
    @Test func aLiteralTypoNeverTrapsAndTextGivesNil() {
        let typo = Version("v2")
        #expect(!typo.isValid)
        #expect(typo.description == "v2")
        #expect(typo.parseError == VersionError(text: "v2", reason: "'v' at offset 0 is not allowed here"))
        let text = "v2"
        #expect(Version(text) == nil)
        #expect(Version(String("1.x")) == nil)
        let literal: Version = "2.0"
        #expect(literal.isValid && literal == 2 && literal.description == "2.0")
        #expect(Version("1.2").isValid && Version("1.2") == (try? Version(parsing: "1.2")))
        #expect(Version(123_456_789_012).isValid)
    }

    @Test func literalsThatAreNotVersionsCompareByTextBeforeEveryVersion() {
        let versions: [Version] = ["2", "v2", "1.x", "0", "1.1-1", "v2"]
        #expect(versions.sorted().map(\.description) == ["1.x", "v2", "v2", "0", "1.1-1", "2"])
        #expect(Version("v2") == Version("v2"))
        #expect(Version("v2") != Version("v3") && Version("v2") != Version("0"))
        #expect(Set<Version>(["v2", "v2", "v3", "0"]).count == 3)
        #expect(Version("v2").base == Version("v2") && !Version("v2").isSubMigration)
    }

    @Test func aLiteralThatIsNotAVersionIsRefusedBeforeAnythingRuns() throws {
        let expected = MigrationError.invalidVersion(text: "1.x", reason: "'x' at offset 2 is not allowed here", manager: "settings")
        #expect(expected.description == "Version \"1.x\" of manager \"settings\" is not a version: 'x' at offset 2 is not "
            + "allowed here. Nothing was migrated. Correct the literal to dot-separated non-negative integers with an "
            + "optional sub-migration number, such as \"2\", \"1.2.5\" or \"1.1-2\".")
        let ran = TestLog()

        // Registered.
        var coordinator = MigrationCoordinator(appVersion: "2")
        var store = Store([])
        var settings = try coordinator.manager("settings", store: store)
        for version: Version in ["1", "1.x", "2"] { settings.register(version) { _ in ran.append("\(version)") } }
        #expect(throws: expected) { try coordinator.plan() }
        #expect(throws: expected) { try coordinator.run() }

        // Depended on.
        coordinator = MigrationCoordinator(appVersion: "2")
        settings = try coordinator.manager("settings", store: store)
        settings.register("1") { _ in ran.append("1") }
        try coordinator.manager("library", store: Store([])).register("2", dependsOn: [settings.migration("1.x")]) { _ in
            ran.append("library@2")
        }
        #expect(throws: expected) { try coordinator.run() }

        // As the baseline: nothing is recorded.
        #expect(throws: expected) { try settings.baseline(at: "1.x") }
        #expect(store.recordedStates.isEmpty)

        // As the app version.
        coordinator = MigrationCoordinator(appVersion: "2.0beta")
        store = Store([])
        try coordinator.manager("settings", store: store).register("1") { _ in ran.append("1") }
        let app = MigrationError.invalidVersion(text: "2.0beta", reason: "'b' at offset 3 is not allowed here", manager: nil)
        #expect(app.description.hasPrefix("App version \"2.0beta\" is not a version: 'b' at offset 3 is not allowed here. "))
        #expect(throws: app) { try coordinator.run() }
        #expect(ran.entries.isEmpty)
        #expect(store.recordedStates.isEmpty)
    }

    @Test func errorMessageSaysWhereAndWhat() {
        #expect(throws: VersionError(text: "1.1a", reason: "'a' at offset 3 is not allowed here")) {
            try Version(parsing: "1.1a")
        }
        #expect(throws: VersionError(text: "", reason: "it is empty")) { try Version(parsing: "") }
        #expect(throws: VersionError(text: "1.", reason: "it ends where a number is expected")) { try Version(parsing: "1.") }
    }

    @Test func compactAndLargeVersionsCompareAlike() throws {
        // Versions of more than four components or past 32 bits take another representation.
        let ordered: [Version] = ["1.2.3.4", "1.2.3.4-0", "1.2.3.4-4294967296", "1.2.3.4.5", "4294967295", "4294967295-1", "4294967296", "4294967296.1"]
        #expect(ordered.reversed().sorted() == ordered)
        #expect(Version("1.2.3.4.0.0") == Version("1.2.3.4"))
        #expect(Set<Version>(["1.2.3.4.0", "1.2.3.4", "01.2.3.4"]).count == 1)
        #expect(Version(Int(UInt32.max) + 1) == Version("4294967296"))
        #expect(Version("4294967296.1-7").base == Version("4294967296.1"))
        #expect(Version("1.2-7").base.description == "1.2")
    }

    @Test func literalsAndLevels() {
        let level: Version = 3
        let text: Version = "3"
        #expect(level == text)
        #expect(Version(2) < level)
        #expect(level.description == "3")
        #expect(("1.1-2" as Version).base == "1.1")
        #expect(("1.1-2" as Version).isSubMigration)
        #expect(!("1.1" as Version).isSubMigration)
    }

    @Test func keepsItsTextButComparesNormalized() {
        let version: Version = "1.0"
        #expect(version.description == "1.0")
        #expect(version == "1")
        #expect(version.hashValue == Version(1).hashValue)
    }

    @Test func codableAsText() throws {
        let versions: [Version] = ["1.0", "2.3-1", "7"]
        let data = try JSONEncoder().encode(versions)
        #expect(String(decoding: data, as: UTF8.self) == #"["1.0","2.3-1","7"]"#)
        #expect(try JSONDecoder().decode([Version].self, from: data).map(\.description) == ["1.0", "2.3-1", "7"])
        #expect(try JSONDecoder().decode([Version].self, from: Data("[3]".utf8)) == [3])
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([Version].self, from: Data(#"["1.x"]"#.utf8)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([Version].self, from: Data("[-1]".utf8)) }
    }

    // MARK: Huge versions

    @Test
    func baseOfAHugeSubMigrationEqualsTheParsedBase() throws {
        let huge = try Version(parsing: "1.2-4294967296")
        #expect(huge.base == Version("1.2"))
        #expect(Set([huge.base, Version("1.2")]).count == 1)
        #expect(!(huge.base < Version("1.2")) && !(Version("1.2") < huge.base))
    }

    @Test func hugeVersionsOrderAndMigrateAlike() throws {
        let ordered: [Version] = [
            "4294967295", "4294967295-0", "4294967295-4294967295", "4294967295-4294967296", "4294967295.0.0.0.1",
            "4294967296", "18446744073709551616", "18446744073709551616-99999999999999999999", "18446744073709551617",
        ]
        #expect(ordered.reversed().sorted() == ordered)
        #expect(Version("18446744073709551616.0.0.0.0") == Version("18446744073709551616"))
        let store = Store([])
        let coordinator = MigrationCoordinator(appVersion: "18446744073709551616")
        registerLogging(Array(ordered.reversed()), on: try coordinator.manager("big", store: store))
        let plan = try coordinator.plan()
        #expect(plan.managers[0].pending == Array(ordered.dropLast()))
        #expect(plan.managers[0].ahead == ["18446744073709551617"])
        try coordinator.run()
        #expect(store.contents == ordered.dropLast().map { "big@\($0)" })
        #expect(store.recordedStates["big"]?.level == "18446744073709551616-99999999999999999999")
        #expect(try coordinator.plan().isUpToDate)
    }
}
