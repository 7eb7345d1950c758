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
