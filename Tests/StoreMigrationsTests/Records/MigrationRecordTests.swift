import Foundation
import Testing
@testable import StoreMigrations

/// A record's applied set: kept ascending, each version once, and each entry's name and
/// fingerprint compared as values, however the entries are held.
@Suite struct MigrationRecordTests {
    @Test func entriesWithTheSameNameAndFingerprintAreEqualAndOthersAreNot() {
        let fingerprint = MigrationFingerprint(of: "CREATE TABLE notes (id INTEGER)")
        let entry = AppliedMigration(version: "1.1", name: "add notes", fingerprint: fingerprint)
        let again = AppliedMigration(version: "1.1", name: "add " + "notes", fingerprint: MigrationFingerprint(of: "CREATE TABLE notes (id INTEGER)"))
        #expect(entry == again)
        #expect(Set([entry, again]).count == 1)
        #expect(again.name == "add notes")
        #expect(again.fingerprint == fingerprint)
        #expect(entry != AppliedMigration(version: "1.1", name: "add notes"))
        #expect(entry != AppliedMigration(version: "1.1", name: "add tags", fingerprint: fingerprint))
        #expect(entry != AppliedMigration(version: "1.1", name: "add notes", fingerprint: MigrationFingerprint(of: "other")))
        #expect(entry != AppliedMigration(version: "1.1"))
        #expect(AppliedMigration(version: "1.1").name == nil)
        #expect(AppliedMigration(version: "1.1").fingerprint == nil)
    }

    @Test func markingKeepsTheSetAscendingAndTheFirstEntryOfAVersion() {
        var record = MigrationRecord()
        for (version, second) in [("1.3", 1.0), ("1.1", 2.0), ("2", 3.0), ("1.2", 4.0), ("1.1", 5.0), ("2", 6.0), ("0.9", 7.0)] {
            record.markApplied(Version(stringLiteral: version), duration: second)
        }
        #expect(record.appliedVersions == ["0.9", "1.1", "1.2", "1.3", "2"])
        #expect(record.applied.map(\.duration) == [7, 2, 4, 1, 3])
        for version: Version in ["0.9", "1.1", "1.2", "1.3", "2"] { #expect(record.isApplied(version)) }
        for version: Version in ["0.8", "1.0", "1.1.1", "1.4", "2.1"] { #expect(!record.isApplied(version)) }
        #expect(record.level == "2")
        #expect(!MigrationRecord().isApplied("1"))
    }

    @Test func subMigrationsArePlacedBetweenTheirVersionAndTheNext() {
        var record = MigrationRecord()
        for version: Version in ["1.1", "1.2", "1.1-2", "1.1-1", "1.2-1", "1.1-1"] { record.markApplied(version) }
        #expect(record.appliedVersions == ["1.1", "1.1-1", "1.1-2", "1.2", "1.2-1"])
        for version: Version in ["1.1-1", "1.1-2", "1.2-1"] { #expect(record.isApplied(version)) }
        for version: Version in ["1.1-3", "1.2-2", "1.0-1"] { #expect(!record.isApplied(version)) }
        #expect(record.level == "1.2-1")
    }
}
