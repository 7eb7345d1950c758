import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

/// Names and fingerprints in a file store's records: written beside `applied`, keyed by version,
/// so that a records file of the previous release reads without a change and older releases still
/// read `applied` as a list of versions.
@Suite struct RecordFileLabelTests {
    let folder: TemporaryFolder
    var url: URL { folder.file("settings.json") }

    init() throws {
        folder = try TemporaryFolder()
    }

    func launch(fingerprint: String, policy: FingerprintPolicy = .fail) throws -> (MigrationCoordinator, MigrationManager<PreferencesStore>) {
        let coordinator = MigrationCoordinator(appVersion: "1.2")
        let settings = try coordinator.manager("settings", store: PreferencesStore(url: url))
        settings.fingerprintPolicy = policy
        settings.register("1.1") { prefs in try prefs.set(true, for: "onboarding.showHelp") }
        settings.register("1.2", options: .named("theme default", fingerprint: fingerprint)) { prefs in
            try prefs.set("light", for: "theme")
        }
        return (coordinator, settings)
    }

    func storedRecords() throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any]
        return try #require((object?[PreferencesStore.levelsKey] as? [String: Any])?["settings"] as? [String: Any])
    }

    /// A damaged fingerprint is a typed error naming the manager, never dropped: dropped, it
    /// would read as "recorded before fingerprints" and hide an edit.
    @Test(arguments: [
        #"{"settings": {"level": "1.2", "applied": ["1.1", "1.2"], "fingerprints": {"1.2": "damaged"}}}"#,
        #"{"settings": {"level": "1.1", "applied": ["1.1"], "inProgress": [{"version": "1.2", "cursor": "a", "done": 1, "batches": 1, "elapsed": 0, "fingerprint": "damaged"}]}}"#,
    ])
    func aMalformedStoredFingerprintIsATypedError(levels: String) throws {
        try Data(#"{"StoreMigrations.levels": \#(levels)}"#.utf8).write(to: url)
        let (coordinator, _) = try launch(fingerprint: "light")
        #expect {
            try coordinator.plan()
        } throws: { error in
            guard case .unreadableState(let manager, _, let reason) = error as? MigrationError else { return false }
            return manager == "settings" && reason.contains("fingerprint") && reason.contains("damaged")
        }
    }

    @Test func aFileOfThePreviousReleaseReadsWithoutAChangeAndKeepsItsFields() throws {
        // As the release before names and fingerprints wrote it, with a field of a later one.
        try Data(#"{"StoreMigrations.levels": {"settings": {"level": "1.1", "applied": ["1.1"], "futureField": 7}}}"#.utf8)
            .write(to: url)
        let (coordinator, settings) = try launch(fingerprint: "light")
        #expect(try coordinator.plan().managers[0].changedFingerprints == [])
        #expect(try settings.record().applied.map(\.fingerprint) == [nil])
        _ = try coordinator.run()

        let entry = try storedRecords()
        #expect(entry["applied"] as? [String] == ["1.1", "1.2"])
        #expect(entry["names"] as? [String: String] == ["1.2": "theme default"])
        #expect(entry["fingerprints"] as? [String: String] == ["1.2": MigrationFingerprint(of: "light").rawValue])
        #expect(entry["futureField"] as? Int == 7)
        #expect(try settings.record().applied.map(\.name) == [nil, "theme default"])
    }

    @Test func anEditedFingerprintIsRefusedAndARepairRewritesTheFile() throws {
        _ = try launch(fingerprint: "light").0.run()
        let (coordinator, settings) = try launch(fingerprint: "light, then dark")
        #expect(throws: MigrationError.self) { try coordinator.run() }
        #expect(try settings.repairFingerprints() == ["1.2"])
        #expect(try storedRecords()["fingerprints"] as? [String: String] == ["1.2": MigrationFingerprint(of: "light, then dark").rawValue])
        #expect(try coordinator.plan().isUpToDate)
    }

    @Test func aMalformedNamesFieldIsAnErrorNotAMissingRecord() throws {
        try Data(#"{"StoreMigrations.levels": {"settings": {"level": "1.1", "applied": ["1.1"], "names": ["oops"]}}}"#.utf8)
            .write(to: url)
        let (coordinator, _) = try launch(fingerprint: "light")
        let error = try #require(throws: MigrationError.self) { try coordinator.plan() }
        #expect("\(error)".contains(#"has a "names" that is an array, not a dictionary of texts by version"#), "\(error)")
    }
}
