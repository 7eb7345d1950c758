import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

/// Every form a record was ever stored in, and what it means: the one decoding all stores use.
@Suite struct StoredRecordTests {
    @Test func aLevelAloneWrittenBeforeRecordsHeldSetsIsTheBaseline() {
        let record = MigrationRecord(decoding: StoredRecord(level: "1.2", appVersion: "1.2"))
        #expect(record == MigrationRecord(baseline: "1.2", appVersion: "1.2"))
        #expect(record.isApplied("1.1.5") && !record.isApplied("1.3"))
    }

    @Test func aLevelAboveTheSetAndBaselineRaisesTheBaseline() {
        // An older release (which writes only the level) migrated the store after a newer one.
        let stored = StoredRecord(level: "2.0", baseline: "1.0", applied: [AppliedMigration(version: "1.1")])
        #expect(MigrationRecord(decoding: stored) == MigrationRecord(applied: [AppliedMigration(version: "1.1")], baseline: "2.0"))
    }

    @Test func aLevelAtOrBelowWhatTheRestGivesChangesNothing() {
        let applied = [AppliedMigration(version: "1.1"), AppliedMigration(version: "1.3")]
        #expect(MigrationRecord(decoding: StoredRecord(level: "1.3", baseline: "1.0", applied: applied))
            == MigrationRecord(applied: applied, baseline: "1.0"))
        #expect(MigrationRecord(decoding: StoredRecord(level: "1.2", applied: applied)) == MigrationRecord(applied: applied))
    }

    @Test func ofTwoEntriesForOneVersionTheFirstRecordedIsKept() {
        let first = AppliedMigration(version: "1.1", appliedAt: Date(timeIntervalSince1970: 10), duration: 1)
        let again = AppliedMigration(version: "1.1", appliedAt: Date(timeIntervalSince1970: 20), duration: 2)
        let record = MigrationRecord(decoding: StoredRecord(applied: [AppliedMigration(version: "1.2"), first, again]))
        #expect(record.applied == [first, AppliedMigration(version: "1.2")])
    }

    @Test func nothingStoredIsAnEmptyRecord() {
        #expect(MigrationRecord(decoding: StoredRecord()).isEmpty)
    }

    /// The file stores' codec reads each legacy entry through the same decoding.
    @Test func theFileCodecDecodesEveryStoredForm() throws {
        let codec = try RecordFileCodec([
            "legacy": ["level": "1.2"],
            "raised": ["level": "3", "applied": ["1", "2"], "baseline": "0.5"],
            "current": ["level": "2", "applied": ["1", "2"], "appVersion": "2.0"],
        ] as [String: Any])
        #expect(codec.records["legacy"] == MigrationRecord(baseline: "1.2"))
        #expect(codec.records["raised"] == MigrationRecord(applied: [.init(version: "1"), .init(version: "2")], baseline: "3"))
        #expect(codec.records["current"] == MigrationRecord(applied: [.init(version: "1"), .init(version: "2")], appVersion: "2.0"))
    }

    /// A progress column that cannot be read is an unreadable record, never a step without
    /// progress (which would start the step over).
    @Test func anUnreadableProgressColumnIsATypedErrorNamingTheManager() throws {
        #expect(try StoredProgress.list(column: nil, of: "m", store: "s", table: "levels") == [])
        #expect(throws: MigrationError.unreadableState(
            manager: "m", store: "s", reason: "its progress in table levels: its progress is not JSON: {oops")) {
            try StoredProgress.list(column: "{oops", of: "m", store: "s", table: "levels")
        }
        #expect(throws: MigrationError.unreadableState(manager: "m", store: "s", reason: "its progress in table levels is 3, not text")) {
            try StoredProgress.list(column: nil, other: "3", of: "m", store: "s", table: "levels")
        }
    }
}
