import Foundation
import NotesApp
import StoreMigrations
import StoreMigrationsSQLiteTesting
import StoreMigrationsTesting

/// The upgrade-testing kit on the demo's stores: a fixture of the demo's 1.0 stores (`notes`
/// notes, 20,000 by default, as `swift run demo` makes them), restored and upgraded by the
/// demo's 2.0 coordinator, against the demo's own migration of a copy of the same stores made by
/// plain file copies outside the timing. A second row times the whole upgrade check (restore,
/// upgrade, a fresh install, the comparison of schema and records) against the same baseline.
struct UpgradeFixtureWorkload {
    let notes: Int
    let timer: Timer

    func run() throws -> [Measurement] {
        let directory = try temporaryDirectory("upgrade-fixture")
        defer { try? FileManager.default.removeItem(at: directory) }
        var tester = UpgradeTester(kinds: [.sqlite]) { location in
            try NotesMigrations.coordinator(for: LegacyNotesApp(directory: location.directory))
        }
        tester.temporaryDirectory = directory
        let legacy = directory.appendingPathComponent("legacy-1.0", isDirectory: true)
        try LegacyNotesApp(directory: legacy).create(notes: notes) { _ in }
        let fixture = try tester.capture(
            StoreLocation(directory: legacy, token: "legacy"), appVersion: "1.0", into: directory.appendingPathComponent("fixture"))

        let demoCopy = directory.appendingPathComponent("demo", isDirectory: true)
        var restored: StoreLocation?
        let prepareKit = {
            if let location = restored { try tester.discard(location) }
            restored = nil
        }
        let (restoreAndUpgrade, demo) = try timer.compare(
            prepareLibrary: prepareKit,
            library: {
                let (location, coordinator) = try tester.restore(fixture)
                restored = location
                try Self.upgrade(coordinator)
            },
            prepareBaseline: {
                try? FileManager.default.removeItem(at: demoCopy)
                try FileManager.default.copyItem(at: legacy, to: demoCopy)
            },
            baseline: { try Self.upgrade(NotesMigrations.coordinator(for: LegacyNotesApp(directory: demoCopy))) })
        try prepareKit()
        let (check, demoAgain) = try timer.compare(
            library: { try tester.check(fixture) },
            prepareBaseline: {
                try? FileManager.default.removeItem(at: demoCopy)
                try FileManager.default.copyItem(at: legacy, to: demoCopy)
            },
            baseline: { try Self.upgrade(NotesMigrations.coordinator(for: LegacyNotesApp(directory: demoCopy))) })

        return [
            Measurement(
                workload: "upgrade fixture (demo, \(notes) notes)", metric: "restore the fixture and upgrade it vs the demo's migration",
                runs: timer.runs, libraryMedian: restoreAndUpgrade.median, baselineMedian: demo.median, target: "≤ 2× the demo's migration"),
            Measurement(
                workload: "upgrade fixture (demo, \(notes) notes)", metric: "whole check (+ fresh install, comparison) vs the demo's migration",
                runs: timer.runs, libraryMedian: check.median, baselineMedian: demoAgain.median, target: "reported"),
        ]
    }

    private static func upgrade(_ coordinator: MigrationCoordinator) throws {
        let report = try coordinator.run()
        guard report.succeeded, report.didRunAnything else {
            throw RawSQLiteError(message: "the demo's upgrade failed: \(report.steps.compactMap(\.error))")
        }
    }
}
