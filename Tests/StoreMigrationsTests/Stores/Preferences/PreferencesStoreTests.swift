import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

@Suite struct PreferencesStoreTests {
    let folder: TemporaryFolder
    let url: URL

    init() throws {
        folder = try TemporaryFolder()
        url = folder.file("settings.json")
    }

    func store(
        format: PreferencesStore.Format = .json, lockTimeout: Duration = .seconds(5), faults: AtomicFile.Faults = .none
    ) -> PreferencesStore {
        PreferencesStore(url: url, format: format, lockTimeout: lockTimeout, faults: faults)
    }

    func write(_ text: String) throws {
        try Data(text.utf8).write(to: url)
    }

    func bytes() throws -> Data {
        try Data(contentsOf: url)
    }

    /// The run's message names the protected file once: the store's description says which file
    /// it is, and neither the file's own error nor the run's repeats it.
    @Test func aProtectedFileIsNamedOnceInTheRunsMessage() throws {
        try write("{}")
        #expect(chmod(url.path, 0o444) == 0)
        let coordinator = MigrationCoordinator(appVersion: "1")
        try coordinator.manager("settings", store: store()).register("1") { prefs in try prefs.set(1, for: "a") }
        let error = #expect(throws: MigrationRunError.self) { try coordinator.run() }
        #expect(error?.description == "Migration settings@1 failed: Will not replace the protected preferences file "
            + "\(url.path) during migration settings@1: it has no write permission (mode 444). Nothing was migrated "
            + "and the file was left as it is: the store never replaces a file its owner protected. Make it writable "
            + "for this process (chmod u+w, or run as its owner) and launch again. Its level stays at none. Applied "
            + "steps stay applied; fix the cause and run again: the next run resumes where this one stopped.")
        #expect(try bytes() == Data("{}".utf8))
    }

    // MARK: Applying

    @Test func applyWritesDataAndLevelTogether() throws {
        let outcome = try store().apply(storeMigration("settings", "1.1") { (prefs: inout Preferences) in
            try prefs.set(true, for: ["onboarding", "showHelp"])
        })
        #expect(outcome.isApplied)
        #expect(String(decoding: try bytes(), as: UTF8.self) == """
            {
              "StoreMigrations.levels": {
                "settings": {
                  "applied": [
                    "1.1"
                  ],
                  "level": "1.1"
                }
              },
              "onboarding": {
                "showHelp": true
              }
            }

            """)
        #expect(try folder.names() == ["settings.json", "settings.json.lock"])
    }

    @Test func aNewStoreObjectReadsTheSameLevelsAndDataBack() throws {
        try write(#"{"showHelp": false, "theme": "dark"}"#)
        _ = try store().apply(storeMigration("settings", "1.1") { (prefs: inout Preferences) in
            try prefs.renameKey("showHelp", to: ["onboarding", "showHelp"])
        })
        _ = try store().apply(storeMigration("settings", "1.1-1") { (prefs: inout Preferences) in
            try prefs.set(2, for: "schema")
        })

        let reopened = store()
        #expect(try reopened.states() == ["settings": LevelState(level: "1.1-1")])
        #expect(try reopened.read() == Preferences(["onboarding": ["showHelp": false], "theme": "dark", "schema": 2]))
    }

    @Test func aLevelWrittenBeforeRecordsHeldSetsCoversEverythingBelowIt() throws {
        try write(#"{"a": 1, "StoreMigrations.levels": {"settings": {"level": "2.0"}}}"#)
        let before = try bytes()
        var ran = false
        for version: Version in ["1.5", "2.0", "2"] {
            let outcome = try store().apply(storeMigration("settings", version) { (_: inout Preferences) in ran = true })
            #expect(outcome == .alreadyApplied(level: "2.0"))
        }
        #expect(!ran)
        #expect(try bytes() == before)
    }

    @Test func aBodyThatThrowsPartWayLeavesTheFileByteForByte() throws {
        try write(#"{"StoreMigrations.levels": {"settings": {"level": "1.0"}}, "keep": 1}"#)
        let before = try bytes()
        #expect(throws: SimulatedBodyFailure.self) {
            try store().apply(storeMigration("settings", "1.1") { (prefs: inout Preferences) in
                prefs.removeValue(for: "keep")
                try prefs.set("half-done", for: "new")
                throw SimulatedBodyFailure()
            })
        }
        #expect(try bytes() == before)
        #expect(try store().states()["settings"]?.level == "1.0")
        #expect(try folder.names() == ["settings.json", "settings.json.lock"])
    }

    @Test func theBodyNeverSeesTheReservedKey() throws {
        try write(#"{"StoreMigrations.levels": {"other": {"level": "3"}}, "theme": "dark"}"#)
        var seen: Preferences?
        _ = try store().apply(storeMigration("settings", "1.1") { (prefs: inout Preferences) in seen = prefs })
        #expect(seen == Preferences(["theme": "dark"]))
        #expect(seen?.contains([PreferencesStore.levelsKey]) == false)
        #expect(try store().read() == Preferences(["theme": "dark"]))
    }

    @Test func aBodyCannotClobberTheReservedKey() throws {
        try write(#"{"StoreMigrations.levels": {"settings": {"level": "1.0"}}}"#)
        let before = try bytes()
        let error = #expect(throws: PreferencesStoreError.self) {
            try store().apply(storeMigration("settings", "1.1") { (prefs: inout Preferences) in
                try prefs.set([:] as PreferenceValue, for: [PreferencesStore.levelsKey])
            })
        }
        #expect(error == .reservedKey(file: url.path, migration: .migration(manager: "settings", version: "1.1")))
        #expect(try bytes() == before)
    }

    @Test func managersSharingTheFileKeepEachOthersLevelsAndUnknownFields() throws {
        try write(#"{"StoreMigrations.levels": {"legacy": {"level": "4", "history": ["x"]}}}"#)
        _ = try store().apply(storeMigration("a", "1") { (prefs: inout Preferences) in try prefs.set(1, for: "a") })
        _ = try store().apply(storeMigration("b", "2") { (prefs: inout Preferences) in try prefs.set(2, for: "b") })
        _ = try store().apply(storeMigration("legacy", "5") { (_: inout Preferences) in })

        #expect(try store().states() == [
            "a": LevelState(level: "1"), "b": LevelState(level: "2"), "legacy": LevelState(level: "5"),
        ])
        let raw = try PreferencesJSON.decode(try bytes())
        #expect(raw[PreferencesStore.levelsKey] == [
            "a": ["level": "1", "applied": ["1"]], "b": ["level": "2", "applied": ["2"]],
            "legacy": ["level": "5", "baseline": "4", "applied": ["5"], "history": ["x"]],
        ])
    }

    @Test func createsTheFilesFolder() throws {
        let nested = folder.file("Application Support/App/settings.json")
        let store = PreferencesStore(url: nested)
        #expect(try store.states() == [:])
        #expect(try store.read() == Preferences())
        _ = try store.apply(storeMigration("settings", "1") { (prefs: inout Preferences) in try prefs.set("x", for: "y") })
        #expect(try PreferencesStore(url: nested).read() == Preferences(["y": "x"]))
    }

    @Test func aMissingFileHasNoStates() throws {
        #expect(try store().states() == [:])
        #expect(try store().read() == Preferences())
        #expect(try folder.names() == [])
    }

    // MARK: Unreadable files

    @Test(arguments: [
        "", "{", #"{"theme": "da"#, "garbage", "[1, 2]", #"{"a": nul}"#, "\u{0}\u{1}\u{2}", "<plist/>",
    ])
    func anUnparsableFileIsATypedErrorAndStaysByteIdentical(text: String) throws {
        try write(text)
        let before = try bytes()
        var ran = false

        let states = #expect(throws: PreferencesStoreError.self) { try store().readRecords() }
        #expect(throws: PreferencesStoreError.self) { try store().read() }
        let applied = #expect(throws: PreferencesStoreError.self) {
            try store().apply(storeMigration("settings", "1.1") { (_: inout Preferences) in ran = true })
        }
        #expect(throws: PreferencesStoreError.self) {
            try store().updateRecord(of: "settings") { $0.setBaseline("9") }
        }

        guard case let .unreadableFile(file, format, _, migration)? = applied else {
            Issue.record("expected unreadableFile, got \(String(describing: applied))")
            return
        }
        #expect(file == url.path)
        #expect(format == .json)
        #expect(migration == .migration(manager: "settings", version: "1.1"))
        #expect(applied?.description.contains(url.path) == true)
        #expect(applied?.description.contains("settings@1.1") == true)
        #expect(applied?.description.contains("left as it is") == true)
        if case .unreadableFile(_, _, _, nil)? = states {} else { Issue.record("readStates names no migration") }
        #expect(!ran)
        #expect(try bytes() == before)
    }

    @Test func aTruncatedFileIsNotTakenForAnEmptyOne() throws {
        _ = try store().apply(storeMigration("settings", "1.0") { (prefs: inout Preferences) in try prefs.set("v", for: "k") })
        let whole = try bytes()
        try whole.prefix(whole.count / 2).write(to: url)
        let truncated = try bytes()
        #expect(throws: PreferencesStoreError.self) { try store().readRecords() }
        #expect(try bytes() == truncated)
    }

    @Test(arguments: [
        #"{"StoreMigrations.levels": 3}"#,
        #"{"StoreMigrations.levels": {"settings": "1.1"}}"#,
        #"{"StoreMigrations.levels": {"settings": {"level": 1}}}"#,
        #"{"StoreMigrations.levels": {"settings": {"level": "1.x"}}}"#,
        #"{"StoreMigrations.levels": {"settings": {"appVersion": ""}}}"#,
    ])
    func malformedLevelsAreATypedErrorAndStayByteIdentical(text: String) throws {
        try write(text)
        let before = try bytes()
        let error = #expect(throws: PreferencesStoreError.self) {
            try store().apply(storeMigration("settings", "1.1") { (_: inout Preferences) in })
        }
        guard case let .invalidLevels(file, _, _, migration)? = error else {
            Issue.record("expected invalidLevels, got \(String(describing: error))")
            return
        }
        #expect(file == url.path)
        #expect(migration == .migration(manager: "settings", version: "1.1"))
        #expect(throws: PreferencesStoreError.self) { try store().readRecords() }
        #expect(try store().read() == Preferences())
        #expect(try bytes() == before)
    }

    @Test func anUnreadableFileIsAnErrorNotAFirstLaunch() throws {
        try write(#"{"StoreMigrations.levels": {"settings": {"level": "1.0"}}}"#)
        let error = #expect(throws: FileStoreError.self) { try store(faults: .failing(.read)).readRecords() }
        #expect(error?.operation == .read)
        #expect(error?.store == "preferences file \(url.path)")
    }

    // MARK: Write failures and values the format cannot hold

    @Test(arguments: [FileStoreError.Operation.createTemporaryFile, .write, .synchronize, .replace])
    func aFailedWriteLeavesTheOldBytesTheOldLevelAndNoTemporaryFile(operation: FileStoreError.Operation) throws {
        try write(#"{"StoreMigrations.levels": {"settings": {"level": "1.0"}}, "keep": 1}"#)
        let before = try bytes()
        let error = #expect(throws: FileStoreError.self) {
            try store(faults: .failing(operation)).apply(storeMigration("settings", "1.1") { (prefs: inout Preferences) in
                try prefs.set(String(repeating: "x", count: 5_000), for: "big")
            })
        }
        #expect(error?.operation == operation)
        #expect(error?.migration == .migration(manager: "settings", version: "1.1"))
        #expect(error?.description.contains("settings@1.1") == true)
        #expect(try bytes() == before)
        #expect(try store().states()["settings"]?.level == "1.0")
        #expect(try folder.names() == ["settings.json", "settings.json.lock"])
    }

    @Test func jsonCannotHoldNaNAndNothingIsWritten() throws {
        try write(#"{"keep": 1}"#)
        let before = try bytes()
        let error = #expect(throws: PreferencesStoreError.self) {
            try store().apply(storeMigration("settings", "1") { (prefs: inout Preferences) in try prefs.set(Double.nan, for: "x") })
        }
        guard case .unencodableValue(url.path, .json, _, .migration(manager: "settings", version: "1"))? = error else {
            Issue.record("expected unencodableValue, got \(String(describing: error))")
            return
        }
        #expect(try bytes() == before)
    }

    @Test func leftoversOfAKilledWriterAreRemovedUnderTheLock() throws {
        try write("{}")
        try Data("{\"part".utf8).write(to: folder.file(".settings.json.\(UUID().uuidString).tmp"))
        _ = try store().apply(storeMigration("settings", "1") { (_: inout Preferences) in })
        #expect(try folder.names() == ["settings.json", "settings.json.lock"])
    }

    // MARK: Locking

    @Test func waitsForTheLockThenTimesOutWithATypedError() throws {
        let holder = open(url.path + ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        try #require(holder >= 0)
        try #require(flock(holder, LOCK_EX | LOCK_NB) == 0)
        var ran = false

        let error = #expect(throws: FileStoreError.self) {
            try store(lockTimeout: .milliseconds(30)).apply(storeMigration("settings", "1") { (_: inout Preferences) in ran = true })
        }
        #expect(error?.operation == .waitForLock)
        #expect(error?.path == url.path + ".lock")
        #expect(error?.store == "preferences file \(url.path)")
        #expect(error?.migration == .migration(manager: "settings", version: "1"))
        #expect(!ran)
        #expect(throws: FileStoreError.self) {
            try store(lockTimeout: .zero).updateRecord(of: "settings") { $0.setBaseline("1") }
        }
        #expect(!FileManager.default.fileExists(atPath: url.path))

        close(holder)
        #expect(try store(lockTimeout: .zero).apply(storeMigration("settings", "1") { (_: inout Preferences) in ran = true }).isApplied)
        #expect(ran)
    }

    @Test func concurrentStoresOnOneFileLoseNoUpdate() throws {
        let managers = (0..<8).map { "manager\($0)" }
        let url = self.url
        DispatchQueue.concurrentPerform(iterations: managers.count) { index in
            let store = PreferencesStore(url: url)
            _ = try? store.apply(storeMigration(managers[index], "1") { (prefs: inout Preferences) in
                try prefs.set(index, for: .key(managers[index]))
            })
        }
        let states = try store().states()
        #expect(states == Dictionary(uniqueKeysWithValues: managers.map { ($0, LevelState(level: "1")) }))
        #expect(try store().read().keys == managers)
    }

    @Test func oneStepRacedByManyRunsOnce() throws {
        let runs = Counter()
        let outcomes = Outcomes()
        let url = self.url
        DispatchQueue.concurrentPerform(iterations: 6) { _ in
            let outcome = try? PreferencesStore(url: url).apply(storeMigration("settings", "1") { (prefs: inout Preferences) in
                runs.increment()
                try prefs.set(runs.value, for: "runs")
            })
            outcomes.append(outcome)
        }
        #expect(runs.value == 1)
        #expect(outcomes.values.filter { $0?.isApplied == true }.count == 1)
        #expect(outcomes.values.filter { $0 == .alreadyApplied(level: "1") }.count == 5)
        #expect(try store().read().int("runs") == 1)
    }

    // MARK: States

    @Test func updateStateRecordsLevelsWithoutTouchingData() throws {
        try write(#"{"theme": "dark"}"#)
        try store().updateRecord(of: "settings") { $0.setBaseline("1.2") }
        try store().updateRecord(of: "settings") { $0.appVersion = "2.0" }
        #expect(try store().states() == ["settings": LevelState(level: "1.2", appVersion: "2.0")])
        #expect(try store().read() == Preferences(["theme": "dark"]))

        try store().updateRecord(of: "settings") { $0 = MigrationRecord() }
        #expect(try store().states() == [:])
        #expect(String(decoding: try bytes(), as: UTF8.self) == "{\n  \"theme\": \"dark\"\n}\n")
    }

    @Test func anUnchangedStateWritesNothing() throws {
        try store().updateRecord(of: "settings") { _ in }
        #expect(!FileManager.default.fileExists(atPath: url.path))
        try write(#"{"StoreMigrations.levels":{"settings":{"level":"1"}}}"#)
        let before = try bytes()
        try store().updateRecord(of: "settings") { $0.setBaseline("1.0") }
        #expect(try bytes() == before)
    }

    @Test func aBaselineOnAMissingFileCreatesIt() throws {
        try store().updateRecord(of: "settings") { $0.setBaseline("1.1") }
        #expect(try store().states() == ["settings": LevelState(level: "1.1")])
        #expect(try store().read() == Preferences())
    }

    @Test func isNotRebuildable() throws {
        #expect(!store().isRebuildable)
        #expect(throws: MigrationError.self) { try store().rebuild(resetting: "settings") }
    }

    // MARK: Property lists

    @Test func aNewPropertyListFileIsBinaryAndKeepsFullDatePrecision() throws {
        let when = Date(timeIntervalSince1970: 1_700_000_000.123)
        _ = try store(format: .propertyList).apply(storeMigration("settings", "1.1") { (prefs: inout Preferences) in
            try prefs.set(when, for: "migratedAt")
            try prefs.set(Data([1, 2, 3]), for: "token")
        })
        #expect(try bytes().starts(with: Array("bplist".utf8)))
        _ = try store(format: .propertyList).apply(storeMigration("settings", "1.2") { (prefs: inout Preferences) in
            try prefs.set(true, for: "second")
        })
        #expect(try bytes().starts(with: Array("bplist".utf8)), "a binary file stays binary")
        let reopened = store(format: .propertyList)
        #expect(try reopened.states() == ["settings": LevelState(level: "1.2")])
        #expect(try reopened.read() == Preferences(["migratedAt": .date(when), "token": .data(Data([1, 2, 3])), "second": true]))
    }

    @Test func anXMLPropertyListIsWrittenBackAsXML() throws {
        let xml = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>showHelp</key><true/><key>launches</key><integer>3</integer>\
            <key>ratio</key><real>1</real><key>since</key><date>2024-05-01T09:30:00Z</date></dict></plist>
            """
        try write(xml)
        _ = try store(format: .propertyList).apply(storeMigration("settings", "1.1") { (prefs: inout Preferences) in
            try prefs.renameKey("showHelp", to: ["onboarding", "showHelp"])
        })
        let text = String(decoding: try bytes(), as: UTF8.self)
        #expect(text.hasPrefix("<?xml"), "XML stays XML: \(text.prefix(40))")
        #expect(text.contains("<key>StoreMigrations.levels</key>"))
        #expect(text.contains("<real>1</real>"), "1.0 stays a real")
        #expect(text.contains("<integer>3</integer>"))
        #expect(text.contains("<date>2024-05-01T09:30:00Z</date>"))
        #expect(try store(format: .propertyList).read() == Preferences([
            "onboarding": ["showHelp": true], "launches": 3, "ratio": 1.0,
            "since": .date(Date(timeIntervalSince1970: 1_714_555_800)),
        ]))
        #expect(try store(format: .propertyList).states() == ["settings": LevelState(level: "1.1")])
    }

    @Test func aNullInAPropertyListIsATypedErrorNamingTheKey() throws {
        try Data(try PreferencesPropertyList.encode(["keep": 1], format: .xml)).write(to: url)
        let before = try bytes()
        let error = #expect(throws: PreferencesStoreError.self) {
            try store(format: .propertyList).apply(storeMigration("settings", "1.1") { (prefs: inout Preferences) in
                try prefs.set(PreferenceValue.null, for: "session.token")
            })
        }
        #expect(error == .nullValue(file: url.path, key: "session.token", migration: .migration(manager: "settings", version: "1.1")))
        #expect(error?.description.contains("\"session.token\"") == true)
        #expect(error?.description.contains("settings@1.1") == true)
        #expect(error?.description.contains(url.path) == true)
        #expect(try bytes() == before)
    }

    @Test func jsonNullsAreKeptEditableAndWrittenBack() throws {
        try write(#"{"lastUser": null, "recent": [null, "a"], "theme": "dark"}"#)
        var seen: PreferenceValue?
        _ = try store().apply(storeMigration("settings", "1.1") { (prefs: inout Preferences) in
            seen = prefs["lastUser"]
            try prefs.renameKey("lastUser", to: ["account", "lastUser"])
            try prefs.set(PreferenceValue.null, for: "token")
        })
        #expect(seen == .null)
        let text = String(decoding: try bytes(), as: UTF8.self)
        #expect(text.contains(#""lastUser": null"#))
        #expect(text.contains(#""token": null"#))
        #expect(try store().read() == Preferences([
            "account": ["lastUser": .null], "recent": [.null, "a"], "theme": "dark", "token": .null,
        ]))
    }

    /// What a migration does not touch is written back as it was read: a date finer than a
    /// millisecond, `1.0` and `1`, a large double.
    @Test func valuesTheMigrationDidNotTouchAreWrittenBackUnchanged() throws {
        let untouched = [
            #""big": 1e+300"#, #""f": 1.0"#, #""i": 1"#, #""precise": {"$date": "2024-05-01T09:30:00.123456Z"}"#,
            #""ms": {"$date": "2024-05-01T09:30:00.936Z"}"#, #""s": "x""#,
        ]
        try write("{" + untouched.joined(separator: ", ") + "}")
        let before = try store().read()
        for version: Version in ["1.1", "1.2", "1.3"] {
            _ = try store().apply(storeMigration("settings", version) { (prefs: inout Preferences) in
                try prefs.set(version.description, for: "touched")
            })
        }
        let text = String(decoding: try bytes(), as: UTF8.self)
        for entry in untouched {
            #expect(text.contains(entry), "\(entry) written back as read, in:\n\(text)")
        }
        var after = try store().read()
        after.removeValue(for: "touched")
        #expect(after == before)
    }

    @Test func aJSONFileIsNotAPropertyList() throws {
        try write(#"{"a": 1}"#)
        let error = #expect(throws: PreferencesStoreError.self) { try store(format: .propertyList).read() }
        guard case .unreadableFile(_, .propertyList, _, _)? = error else {
            Issue.record("expected unreadableFile, got \(String(describing: error))")
            return
        }
    }
}

/// A thread-safe counter for bodies run from several threads.
private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func increment() { lock.withLock { count += 1 } }
}

/// Outcomes collected from several threads.
private final class Outcomes: @unchecked Sendable {
    private let lock = NSLock()
    private var collected: [Outcome?] = []
    var values: [Outcome?] { lock.withLock { collected } }
    func append(_ outcome: Outcome?) { lock.withLock { collected.append(outcome) } }
}
