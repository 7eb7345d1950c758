import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// Friction peer suites met using the public API as a new user would, each fixed.
@Suite struct FrictionTests {
    @Test func everyAppVersionHookRunsInTheOrderItWasAdded() throws {
        let store = InMemoryStore<[String]>([])
        let calls = Locked<[String]>([])
        func launch(_ version: Version) throws {
            let coordinator = MigrationCoordinator(appVersion: version)
            let prefs = try coordinator.manager("prefs", store: store)
            prefs.onAppVersionChange { previous, current in calls.value.append("first \(previous?.description ?? "none")→\(current)") }
            prefs.onAppVersionChange { previous, current in calls.value.append("second \(previous?.description ?? "none")→\(current)") }
            try coordinator.run()
        }
        try launch("1.0")
        try launch("1.0")
        try launch("2.0")
        #expect(calls.value == ["first none→1.0", "second none→1.0", "first 1.0→2.0", "second 1.0→2.0"])
        #expect(try store.readRecords()["prefs"]?.appVersion == "2.0")
    }

    @Test func aThrowingHookStopsTheLaterOnesAndRecordsNothing() throws {
        let store = InMemoryStore<[String]>([])
        let calls = Locked<[String]>([])
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        let prefs = try coordinator.manager("prefs", store: store)
        prefs.onAppVersionChange { _, _ in calls.value.append("first") }
        prefs.onAppVersionChange { _, _ in throw SimulatedBodyFailure() }
        prefs.onAppVersionChange { _, _ in calls.value.append("third") }
        #expect(throws: MigrationRunError.self) { try coordinator.run() }
        #expect(calls.value == ["first"])
        #expect(try store.readRecords()["prefs"] == nil)
    }

    @Test func aRunErrorListsEveryFailureWithItsStep() throws {
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        let a = try coordinator.manager("a", store: InMemoryStore<[String]>([], name: "a store"))
        let b = try coordinator.manager("b", store: InMemoryStore<[String]>([], name: "b store"))
        a.register("1.0") { _ in throw TestFailure(message: "a broke") }
        b.register("1.0") { _ in throw TestFailure(message: "b broke") }
        let error = try #require(#expect(throws: MigrationRunError.self) { try coordinator.run() })
        #expect(error.errors.map(\.step.id.description) == ["a@1.0", "b@1.0"])
        #expect(error.errors.map { $0.error as? TestFailure } == [TestFailure(message: "a broke"), TestFailure(message: "b broke")])
        #expect(error.underlyingError as? TestFailure == TestFailure(message: "a broke"))
    }

    @Test func aVersionErrorQuotesControlCharactersAndIsItsOwnLocalizedDescription() throws {
        let error = try #require(#expect(throws: VersionError.self) { try Version(parsing: "1.1\n") })
        #expect(error.description.hasPrefix(#""1.1\n" is not a version: '"#))
        #expect(!error.description.contains("\n"))
        #expect((error as any Error).localizedDescription == error.description)
    }

    @Test func anUnparsableStoreSaysNothingWasMigratedOnceAndNoAccessAdvice() throws {
        let folder = try TemporaryFolder()
        let url = folder.file("settings.json")
        try Data("{".utf8).write(to: url)
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        try coordinator.manager("settings", store: PreferencesStore(url: url)).register("1.0") { _ in }
        let error = try #require(#expect(throws: MigrationError.self) { try coordinator.plan() })
        let text = error.description
        // The file's own error names it: the opening does not name it again.
        #expect(text.hasPrefix("The level of manager \"settings\" cannot be read. The preferences file \(url.path) is not "), "\(text)")
        #expect(text.components(separatedBy: url.path).count == 2, "\(text)")
        #expect(text.components(separatedBy: "Nothing was migrated").count == 2, "\(text)")
        #expect(!text.contains("Fix access to the store"), "\(text)")
        #expect(!text.contains(".."), "\(text)")
        #expect(try Data(contentsOf: url) == Data("{".utf8))
    }

    @Test func aFailedStepsMessageQuotesItsErrorWithoutADoublePeriod() throws {
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        try coordinator.manager("a", store: InMemoryStore<[String]>([], name: "a store")).register("1.0") { _ in
            throw TestFailure(message: "the disk of the mind is full.")
        }
        let error = try #require(#expect(throws: MigrationRunError.self) { try coordinator.run() })
        #expect(error.description == "Migration a@1.0 on a store failed: the disk of the mind is full. Its level stays at none. "
            + "Applied steps stay applied; fix the cause and run again: the next run resumes where this one stopped.")
    }

    @Test func aStoreChosenAtRunTimeGetsAManager() throws {
        let folder = try TemporaryFolder()
        let url = folder.file("settings.json")
        func launch(_ store: any MigrationStore<Preferences>) throws -> MigrationReport {
            let coordinator = MigrationCoordinator(appVersion: "2.0")
            let settings = try coordinator.manager("settings", store: store)
            settings.register("2.0") { prefs in try prefs.set("dark", for: "theme") }
            return try coordinator.run()
        }
        #expect(try launch(PreferencesStore(url: url)).steps.map(\.outcome) == [.applied])
        #expect(try launch(PreferencesStore(url: url)).steps.isEmpty, "the wrapper reads the same records")
        let written = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any]
        #expect(written?["theme"] as? String == "dark")
        // Two wrappers of one file are one store to the scheduler.
        #expect(AnyMigrationStore(PreferencesStore(url: url)).identity == PreferencesStore(url: url).identity)
    }

    // A generous outer bound, not a deadline: in a full `swift test` the main queue is drained
    // only when the runner's main thread gets to it, which took 57 to 135 s on two busy cores.
    @Test(.timeLimit(.minutes(10)))
    func runWithACompletionCallsItOnTheMainQueueByDefault() async throws {
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        try coordinator.manager("a", store: InMemoryStore<[String]>([])).register("1.0") { $0.append("a") }
        // Linux's libdispatch drains the main queue on a pool thread once the main thread parks
        // in dispatchMain(), so the queue is recognised by a value set on it, not by the thread.
        let key = DispatchSpecificKey<String>()
        DispatchQueue.main.setSpecific(key: key, value: "main")
        defer { DispatchQueue.main.setSpecific(key: key, value: nil) }
        let (onMain, applied) = await withCheckedContinuation { continuation in
            coordinator.run { result in
                continuation.resume(returning: (DispatchQueue.getSpecific(key: key) == "main", (try? result.get())?.steps.count))
            }
        }
        #expect(onMain)
        #expect(applied == 1)
    }

    @Test func aBodyIsToldTheLevelBeforeItsStep() throws {
        let store = InMemoryStore<[String]>([])
        let seen = Locked<[String]>([])
        func launch(_ appVersion: Version, _ versions: [Version]) throws {
            let coordinator = MigrationCoordinator(appVersion: appVersion)
            let prefs = try coordinator.manager("prefs", store: store)
            for version in versions {
                prefs.register(version) { _, context in
                    seen.value.append("\(context.version) after \(context.levelBefore?.description ?? "none")")
                }
            }
            try coordinator.run()
        }
        try launch("1.1", ["1.0", "1.1"])
        try launch("2.0", ["1.0", "1.1", "1.2", "2.0"])
        #expect(seen.value == ["1.0 after none", "1.1 after 1.0", "1.2 after 1.1", "2.0 after 1.2"])
        #expect(MigrationContext(manager: "prefs", version: "3.0", levelBefore: "2.0").levelBefore == "2.0")
    }

    @Test func sqliteAdviceFitsQueryOnlyAndOrRollback() throws {
        let folder = try TemporaryFolder()
        let store = SQLiteStore(url: folder.file("library.sqlite"))
        try store.write { db in try db.execute("CREATE TABLE item(id INTEGER PRIMARY KEY)") }

        let readOnly = try #require(#expect(throws: SQLiteError.self) {
            try store.apply(sqliteStep("1.0") { db in
                try db.execute("PRAGMA query_only = ON")
                try db.execute("INSERT INTO item VALUES (1)")
            })
        })
        #expect(readOnly.description.hasSuffix("The connection is read-only (PRAGMA query_only = ON, set by a body, or the "
            + "connection of SQLiteStore.read); the file itself is writable. Nothing of the statement was written. Leave "
            + "query_only alone in migration bodies, and write through a migration or SQLiteStore.write."), "\(readOnly)")

        // The body sees the store's error; the SQLite error it carries gives the advice.
        let ended = try #require(#expect(throws: SQLiteStoreError.self) {
            try store.apply(sqliteStep("1.0") { db in
                try db.execute("INSERT INTO item VALUES (1)")
                try db.execute("INSERT OR ROLLBACK INTO item VALUES (1)")
            })
        })
        guard case .transactionEnded(_, let sqliteError?) = ended.reason else {
            Issue.record("expected transactionEnded with its SQLite error, got \(ended)")
            return
        }
        let error = sqliteError
        #expect(error.description.hasSuffix("Its conflict clause (OR ROLLBACK, ON CONFLICT ROLLBACK) or a trigger's "
            + "RAISE(ROLLBACK) rolled back the whole transaction, not only the statement: a migration step fails with "
            + "nothing of it kept. Use OR ABORT (the default) or OR IGNORE to undo only the statement, or fix the data it writes."), "\(error)")
        // A plain conflict keeps the plain advice: only the statement was undone.
        let plain = try #require(#expect(throws: SQLiteError.self) {
            try store.write { db in try db.execute("INSERT INTO item VALUES (7); INSERT INTO item VALUES (7)") }
        })
        #expect(plain.description.hasSuffix("The statement broke a constraint of the schema; the statement was undone. Fix the data it writes, or the constraint."))
        #expect(try store.readRecords().isEmpty)
    }

    @Test func aDuplicateVersionNamesBothSpellings() throws {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let prefs = try coordinator.manager("prefs", store: InMemoryStore<[String]>([]))
        prefs.register("1.0") { _ in }
        prefs.register("1.00") { _ in }
        let error = try #require(#expect(throws: MigrationError.self) { try coordinator.plan() })
        #expect(error.description.hasPrefix("Manager \"prefs\" registers migration 1.0 twice, also as 1.00: "), "\(error)")
        let same = MigrationError.duplicateMigration(manager: "prefs", version: "1.1", alsoRegisteredAs: "1.1")
        #expect(same.description == "Manager \"prefs\" registers migration 1.1 twice. Merge the two bodies or give one another version.")
    }

    // MARK: issue 28

    /// Item 1: a reverse-DNS key is the key the user wrote, as `UserDefaults` reads it; a rename
    /// that finds nothing is noted on the step's line of the report, not silently applied.
    @Test func aDottedPreferenceKeyIsOneKeyAndAMissingRenameIsNoted() throws {
        let folder = try TemporaryFolder()
        let url = folder.file("settings.json")
        try Data(#"{"com.example.showHelp": true}"#.utf8).write(to: url)
        let coordinator = MigrationCoordinator(appVersion: "1.1")
        let settings = try coordinator.manager("settings", store: PreferencesStore(url: url))
        settings.register("1.1") { prefs in
            try prefs.renameKey("com.example.showHelp", to: "onboarding.showHelp")
            try prefs.renameKey("com.example.fontSize", to: "appearance.fontSize")
        }
        let report = try coordinator.run()
        #expect(try PreferencesStore(url: url).read() == Preferences(["onboarding.showHelp": true]))
        let note = #"renameKey found no value at "com.example.fontSize"; nothing was moved to "appearance.fontSize""#
        #expect(report.steps.map(\.notes) == [[note]])
        #expect(report.description.contains("settings@1.1: applied"))
        #expect(report.description.contains("\n    note: " + note), "\(report)")
        let decoded = try JSONDecoder().decode(MigrationReport.self, from: JSONEncoder().encode(report))
        #expect(decoded.steps.map(\.notes) == [[note]])
    }

    /// Item 1, `UserDefaults`: what the migration wrote is what `integer(forKey:)` reads.
    @Test func aUserDefaultsRenameWritesTheKeyUserDefaultsReads() throws {
        let folder = try TemporaryFolder()
        let suite = folder.file("com.example.app").path
        let defaults = try #require(UserDefaults(suiteName: suite))
        defaults.setPersistentDomain(["launchCount": 7], forName: suite)
        #if !canImport(Darwin)
        _ = defaults.synchronize()
        #endif
        let coordinator = MigrationCoordinator(appVersion: "1.1")
        try coordinator.manager("settings", store: UserDefaultsStore(suiteName: suite)).register("1.1") { prefs in
            try prefs.renameKey("launchCount", to: "stats.launchCount")
        }
        let report = try coordinator.run()
        #expect(report.steps.map(\.notes) == [[]])
        #expect(UserDefaults(suiteName: suite)?.integer(forKey: "stats.launchCount") == 7)
        #expect(UserDefaults(suiteName: suite)?.object(forKey: "stats") == nil)
    }

    /// Item 10: the second of two runs at once on one coordinator found the step done by the
    /// first: it says another run did it, and does not claim to have created the store.
    @Test func theSecondOfTwoConcurrentRunsSaysAnotherRunDidIt() throws {
        let folder = try TemporaryFolder()
        let url = folder.file("settings.json")
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        let started = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let lock = NSLock(), planned = Locked(0)
        coordinator.observer = { event in
            guard case .planned = event else { return }
            lock.withLock {
                planned.value += 1
                if planned.value == 2 { release.signal() }
            }
        }
        try coordinator.manager("settings", store: PreferencesStore(url: url)).register("1.0") { prefs in
            started.signal()
            _ = release.waitForEvent()
            try prefs.set(true, for: "ready")
        }
        let reports = Locked<[MigrationReport]>([])
        let done = DispatchSemaphore(value: 0)
        func run() {
            coordinator.run(queue: .global()) { result in
                if let report = try? result.get() { lock.withLock { reports.value.append(report) } }
                done.signal()
            }
        }
        run()
        #expect(started.waitForEvent())
        run()
        #expect(done.waitForEvent() && done.waitForEvent())
        let byOutcome = reports.value.sorted { a, _ in a.steps.first?.outcome == .applied }
        try #require(byOutcome.count == 2)
        #expect(byOutcome[0].steps.map(\.outcome) == [.applied])
        #expect(byOutcome[0].managers.map(\.createdStore) == [true])
        #expect(byOutcome[1].steps.map(\.outcome) == [.alreadyApplied(level: "1.0")])
        #expect(byOutcome[1].managers.map(\.createdStore) == [false])
        #expect(byOutcome[1].description.contains("settings@1.0: already applied by another run or process"), "\(byOutcome[1])")
        #expect(!byOutcome[1].description.contains("store created"), "\(byOutcome[1])")
    }

    /// Item 11: a launch that left its deferred work for later did what it should, and its
    /// headline says so.
    @Test func aLaunchThatPostponedItsWorkSaysSo() throws {
        let coordinator = MigrationCoordinator(appVersion: "2")
        let data = try coordinator.manager("data", store: InMemoryStore<[Int]>([]))
        data.registerResumable("2", batchSize: .fixed(10), deferred: true) { _, _ in .finished(processed: 0) }
        let report = try coordinator.run()
        #expect(report.succeeded)
        #expect(report.description.hasPrefix("Migration to app version 2: 0 of 1 step applied, 1 postponed (they resume later) in "),
            "\(report)")
    }

    /// Item 2: a transform that returns a value for a column it did not list fails with the
    /// store's typed error naming the table, the column and the migration; nothing is written.
    @Test func aTransformWritingAnUnlistedColumnIsATypedErrorAndWritesNothing() throws {
        let folder = try TemporaryFolder()
        let store = SQLiteStore(url: folder.file("library.sqlite"))
        try store.write { db in
            try db.execute("CREATE TABLE event(id INTEGER PRIMARY KEY, title TEXT, guid TEXT); INSERT INTO event(title) VALUES ('a'), ('b')")
        }
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let library = try coordinator.manager("library", store: store)
        library.registerResumable("2.0", transformingRowsOf: "event", columns: ["title"]) { _ in
            ["title": .text("x"), "guid": .text("g")]
        }
        let error = try #require(#expect(throws: MigrationRunError.self) { try coordinator.run() })
        let cause = try #require(error.underlyingError as? SQLiteStoreError, "\(error)")
        guard case let .unlistedColumn(column, table, listed) = cause.reason else {
            Issue.record("expected unlistedColumn, got \(cause)")
            return
        }
        #expect(column == "guid" && table == "event" && listed == ["title"])
        #expect(cause.migration == MigrationReference(manager: "library", version: "2.0"))
        #expect(cause.description.hasPrefix("Migration library@2.0 on SQLite database "), "\(cause)")
        #expect(cause.description.hasSuffix(" returned a value for column \"guid\" of table \"event\" from its row transform, "
            + "which lists only title; nothing of the transaction was kept. List \"guid\" in the transform's columns."), "\(cause)")
        #expect(try store.read { db in try db.rows("SELECT title FROM event ORDER BY id").map { try $0[0] as String } } == ["a", "b"])
        #expect(try store.readRecords()["library"]?.appliedVersions.isEmpty ?? true)
    }

    /// Item 8: a store path through a regular file is not a matter of permissions, and the
    /// message says what is in the way.
    @Test func aStorePathThroughAFileSaysAFileIsInTheWay() throws {
        let folder = try TemporaryFolder()
        try Data("{}".utf8).write(to: folder.file("notes.json"))
        let url = folder.file("notes.json").appendingPathComponent("settings.json")
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        try coordinator.manager("settings", store: PreferencesStore(url: url)).register("1.0") { _ in }
        let error = try #require(#expect(throws: MigrationError.self) { try coordinator.plan() })
        #expect(error.description.contains("A part of the path is a file, not a folder: move that file, or give the store another path."),
            "\(error)")
        #expect(!error.description.contains("data protection"), "\(error)")
        let direct = try #require(#expect(throws: FileStoreError.self) { try PreferencesStore(url: url).readRecords() })
        #expect(direct.operation == .read && direct.code == ENOTDIR)
        #expect(try Data(contentsOf: folder.file("notes.json")) == Data("{}".utf8))
    }

    /// Item 3: a name and the post-deploy mark combine, in either order.
    @Test func aPostDeployMigrationCanBeNamed() throws {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let orders = try coordinator.manager("orders", store: InMemoryStore<[String]>([]))
        orders.register("2.0") { $0.append("2.0") }
        orders.register("2.0-1", options: .named("drop legacy_ref").postDeploy) { $0.append("2.0-1") }
        orders.register("2.0-2", options: .postDeploy.named("drop old index", fingerprint: "v1")) { $0.append("2.0-2") }
        let plan = try coordinator.plan()
        #expect(plan.steps.map(\.title) == ["orders@2.0"])
        #expect(plan.postDeploySteps.map(\.title) == ["orders@2.0-1 (drop legacy_ref)", "orders@2.0-2 (drop old index)"])
        #expect(MigrationOptions.named("a").setting(PostDeployMigration.self, true).isPostDeploy)
        #expect(MigrationOptions.named("a", fingerprint: "f").postDeploy.fingerprint == "f")
    }
}
