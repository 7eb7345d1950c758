import Foundation
import Testing
@testable import StoreMigrations

/// The one reader of the SQL stores' record tables, fed rows as a driver would; real databases
/// are read in the SQLite and PostgreSQL suites.
@Suite struct SQLRecordReaderTests {
    static func reader() -> SQLRecordReader {
        SQLRecordReader(levelsTable: "levels", historyTable: "history", store: "test database")
    }

    @Test func historyRowsOutOfKeyOrderAreAppliedInKeyOrderAndTheFirstOfTwoIsKept() throws {
        var reader = Self.reader()
        try reader.history(of: "m", id: 3, version: .text("2"), appliedAt: 30, duration: 1, name: "late", fingerprint: nil)
        try reader.history(of: "m", id: 1, version: .text("1"), appliedAt: 10, duration: 1, name: nil, fingerprint: nil)
        try reader.history(of: "other", id: 4, version: .text("1"), appliedAt: 40, duration: 1, name: nil, fingerprint: nil)
        try reader.history(of: "m", id: 2, version: .text("2"), appliedAt: 20, duration: 1, name: "first", fingerprint: nil)
        let records = reader.records()
        #expect(records["m"]?.applied.map(\.version) == ["1", "2"])
        #expect(records["m"]?.applied.last?.name == "first")
        #expect(records["other"]?.applied.map(\.version) == ["1"])
    }

    @Test func aLevelsRowAloneIsALevelOnlyRecordAndItsStaleProgressIsDropped() throws {
        var reader = Self.reader()
        try reader.levels(
            manager: "m", level: .text("3"), appVersion: .text("1.0"), baseline: .null,
            progress: .text(#"[{"batches":1,"cursor":"9","done":9,"elapsed":0.1,"version":"2"},{"batches":1,"cursor":"5","done":5,"elapsed":0.1,"version":"4"}]"#))
        let record = try #require(reader.records()["m"])
        #expect(record.baseline == "3")
        #expect(record.appVersion == "1.0")
        #expect(record.inProgress.map(\.version) == ["4"])
    }

    @Test func aValueThatIsNotAVersionNamesItsColumnTableManagerAndStore() throws {
        var reader = Self.reader()
        #expect(throws: MigrationError.unreadableState(
            manager: "m", store: "test database", reason: "its version in table history is 42, not text"))
        {
            try reader.history(of: "m", id: 1, version: .other("42"), appliedAt: nil, duration: nil, name: nil, fingerprint: nil)
        }
        #expect(throws: MigrationError.self) {
            try reader.levels(manager: "m", level: .text("x.y"), appVersion: .null, baseline: .null, progress: .null)
        }
    }

    @Test func aDamagedFingerprintIsAnErrorNeverDropped() throws {
        var reader = Self.reader()
        #expect(throws: MigrationError.unreadableState(
            manager: "m", store: "test database",
            reason: #"the fingerprint of 1 in table history is "nonsense", not algorithm:digest"#))
        {
            try reader.history(of: "m", id: 1, version: .text("1"), appliedAt: nil, duration: nil, name: nil, fingerprint: "nonsense")
        }
    }
}
