import Foundation
import Testing
import StoreMigrations
import StoreMigrationsSQLite
import TestSupport

/// A database that does not exist yet is created by the first step: the plan and the report say
/// so, a folder that cannot be created is a typed error, and files a killed creation left are
/// cleaned up.
@Suite struct SQLiteStoreCreationTests {
    let scratch: TemporaryFolder

    init() throws {
        scratch = try TemporaryFolder()
    }

    @Test func planAndReportSayTheMissingDatabaseIsCreated() throws {
        let url = scratch.url.appendingPathComponent("Group Containre/library.sqlite")
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        let library = try coordinator.manager("library", store: SQLiteStore(url: url))
        library.register("1.0") { db in try db.execute("CREATE TABLE note(id INTEGER PRIMARY KEY)") }

        let plan = try coordinator.plan()
        #expect(plan.managers[0].createsStore)
        #expect(plan.description.contains("library (SQLite database \(url.path)): level none, first launch (runAll), "
            + "store does not exist: its first step creates it"))
        #expect(!FileManager.default.fileExists(atPath: url.deletingLastPathComponent().path), "planning creates nothing")

        let report = try coordinator.run()
        #expect(report.managers[0].createdStore)
        #expect(report.description.contains("  library: level none → 1.0; store created (it did not exist)"))

        let again = try coordinator.plan()
        #expect(!again.managers[0].createsStore)
        #expect(!again.description.contains("does not exist"))
        #expect(try coordinator.run().managers[0].createdStore == false)
    }

    @Test func anExistingEmptyDatabaseIsNotReportedAsCreated() throws {
        let url = scratch.file("library.sqlite")
        try SQLiteStore(url: url).write { _ in }
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        let library = try coordinator.manager("library", store: SQLiteStore(url: url))
        library.register("1.0") { _ in }
        #expect(try coordinator.plan().managers[0].createsStore == false)
        #expect(try coordinator.run().managers[0].createdStore == false)
    }

    @Test func aFolderThatCannotBeCreatedIsATypedErrorNamingTheStore() throws {
        // A file where a folder should be: refused even to root.
        let blocker = scratch.file("Documents")
        try Data("not a folder".utf8).write(to: blocker)
        let store = SQLiteStore(url: blocker.appendingPathComponent("db/library.sqlite"))
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        let library = try coordinator.manager("library", store: store)
        library.register("1.0") { db in try db.execute("CREATE TABLE note(id INTEGER PRIMARY KEY)") }

        let runError = try #require(#expect(throws: MigrationRunError.self) { try coordinator.run() })
        let error = try #require(runError.underlyingError as? FileStoreError)
        #expect(error.operation == .createDirectory)
        #expect(error.path == blocker.appendingPathComponent("db").path)
        #expect(error.store == store.description)
        #expect(error.migration == MigrationReference(manager: "library", version: "1.0"))
        #expect(error.description.hasPrefix("Could not create the folder \(blocker.path)/db (\(store.description)) during migration library@1.0: "))
        #expect(error.description.hasSuffix("Nothing was migrated. Check that the parent folder is writable, or create the folder before launching."))
        #expect(try Data(contentsOf: blocker) == Data("not a folder".utf8))
    }

    @Test func filesOfACreationWhoseProcessDiedAreRemovedByTheNextCreation() throws {
        let url = scratch.file("library.sqlite")
        let dead = try Self.deadProcessID()
        let live = getpid()
        var status = stat()
        try #require(stat("/proc/self/ns/pid", &status) == 0, "Linux names this process's PID namespace")
        let namespace = String(status.st_ino)
        // A minute old, or of this PID namespace, however recent.
        let stale = [
            ".library.sqlite.\(dead).\(UUID().uuidString).creating", ".library.sqlite.\(dead).\(UUID().uuidString).creating-journal",
            ".library.sqlite.\(dead)-\(namespace).\(UUID().uuidString).creating",
        ]
        // Kept: a live process's, ones too recent to be sure of (of another PID namespace, or of a
        // release that did not name it), and files that only look alike.
        let kept = [
            ".library.sqlite.\(live).\(UUID().uuidString).creating",
            ".library.sqlite.\(dead).\(UUID().uuidString).creating-wal",
            ".other.sqlite.\(dead).\(UUID().uuidString).creating",
            ".library.sqlite.\(dead).notes",
            ".library.sqlite.\(live)-\(namespace).\(UUID().uuidString).creating",
            ".library.sqlite.\(dead)-1\(namespace).\(UUID().uuidString).creating",
        ]
        let recent: Set = [kept[1], stale[2], kept[5]]
        let anHourAgo = Date(timeIntervalSinceNow: -3_600)
        for name in stale + kept {
            try Data("partial".utf8).write(to: scratch.file(name))
            if !recent.contains(name) {
                try FileManager.default.setAttributes([.modificationDate: anHourAgo], ofItemAtPath: scratch.file(name).path)
            }
        }

        try SQLiteStore(url: url).write { db in try db.execute("CREATE TABLE note(id INTEGER PRIMARY KEY)") }

        let left = Set(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path)).filter { $0.hasPrefix(".") }
        #expect(left == Set(kept))
    }

    /// What a kill leaves once a new database is linked into place and before its first step
    /// commits: the file alone (no journal of the creation beside it, the step's WAL holding
    /// nothing committed) is a whole database, empty, in the store's journal mode since before
    /// the link: its header's change counter (bytes 24–27) shows the one rollback-mode commit of
    /// the creation aside, and no second one of a switch to WAL made on the store's path.
    @Test(arguments: [SQLiteStore.JournalMode.wal, .keep])
    func aNewDatabaseIsWholeOnItsOwnOnceLinkedIntoPlace(journalMode: SQLiteStore.JournalMode) throws {
        let url = scratch.file("library.sqlite")
        let copy = scratch.file("copy.sqlite")
        var besideDuringStep: Set<String> = []
        try SQLiteStore(url: url, journalMode: journalMode).write { _ in
            try FileManager.default.copyItem(at: url, to: copy)
            besideDuringStep = Set(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path))
        }

        #expect(besideDuringStep == (journalMode == .wal
            ? ["library.sqlite", "library.sqlite-wal", "library.sqlite-shm", "copy.sqlite"]
            : ["library.sqlite", "copy.sqlite"]))
        #expect(try RawSQLite.journalModeBytes(of: copy.path) == (journalMode == .wal ? [2, 2] : [1, 1]))
        let header = try Data(contentsOf: copy)
        #expect(Array(header[24..<28]) == [0, 0, 0, 1])
        #expect(try RawSQLite.strings("PRAGMA integrity_check", at: copy.path) == ["ok"])
        #expect(try RawSQLite.strings("SELECT count(*) FROM sqlite_master", at: copy.path) == ["0"])
    }

    /// A release whose history, 1.0 by SQL and 2.0 a declared schema, creates new databases from
    /// that schema, seeding a welcome note with `seed` run first.
    static func creatingRelease(
        at url: URL, journalMode: SQLiteStore.JournalMode = .wal, configure: (@Sendable (Database) throws -> Void)? = nil,
        seed: @escaping @Sendable (Database) throws -> Void = { _ in }
    ) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let library = try coordinator.manager("library", store: SQLiteStore(url: url, journalMode: journalMode, configure: configure))
        library.register("1.0", sql: "CREATE TABLE note(id INTEGER PRIMARY KEY)")
        library.register("2.0", schema: [.table("note", primaryKey: ["id"], columns: [.column("id", .integer), .column("title", .text)])])
        library.createNewDatabasesFromSchema(historyData: .seed { db in
            try seed(db)
            try db.execute("INSERT INTO note(title) VALUES ('Welcome')")
        })
        return coordinator
    }

    /// A creation from the declared schema builds the new database whole aside, its journal in
    /// memory (nothing beside it on disk), and links it into place once committed, in the store's
    /// journal mode: the store's path holds nothing until then, and nothing is left aside.
    @Test(arguments: [SQLiteStore.JournalMode.wal, .keep])
    func aDatabaseCreatedFromTheSchemaIsBuiltWholeAsideAndLinkedOnceCommitted(journalMode: SQLiteStore.JournalMode) throws {
        let url = scratch.file("library.sqlite")
        let folder = scratch.url.path
        let during = Locked<[String]>([])
        let coordinator = try Self.creatingRelease(at: url, journalMode: journalMode, seed: { _ in
            during.value = try FileManager.default.contentsOfDirectory(atPath: folder)
        })

        let report = try coordinator.run()

        #expect(report.succeeded)
        #expect(report.managers[0].createdStore)
        #expect(during.value.count == 1, "\(during.value)")
        #expect(during.value.allSatisfy { $0.hasPrefix(".library.sqlite.\(getpid())-") && $0.hasSuffix(".creating") })
        #expect(try scratch.names().filter { !$0.hasPrefix("library.sqlite-") } == ["library.sqlite"])
        #expect(try RawSQLite.journalModeBytes(of: url.path) == (journalMode == .wal ? [2, 2] : [1, 1]))
        #expect(try RawSQLite.strings("PRAGMA integrity_check", at: url.path) == ["ok"])
        #expect(try RawSQLite.strings("SELECT title FROM note", at: url.path) == ["Welcome"])
        #expect(try RawSQLite.recordedVersions(at: url.path) == ["1.0", "2.0"])
    }

    /// The database built aside is given the store's `configure` (a function the seed calls), and
    /// its errors name the store's path, not the file aside.
    @Test func aDatabaseBuiltAsideIsConfiguredAndNamedAsTheStores() throws {
        let url = scratch.file("library.sqlite")
        let configure: @Sendable (Database) throws -> Void = { db in
            try db.createFunction("greeting", argumentCount: 0) { _ in .text("Hello") }
        }
        let greeted = try Self.creatingRelease(at: url, configure: configure, seed: { db in
            try db.execute("INSERT INTO note(title) VALUES (greeting())")
        })
        #expect(try greeted.run().succeeded)
        #expect(try RawSQLite.strings("SELECT title FROM note ORDER BY id", at: url.path) == ["Hello", "Welcome"])

        let other = scratch.file("other.sqlite")
        let failing = try Self.creatingRelease(at: other, seed: { db in try db.execute("INSERT INTO missing VALUES (1)") })
        let report = try runReport(of: failing)
        let error = try #require(report.steps.first?.error as? SQLiteError)
        #expect(error.path == other.path)
        #expect(error.message == "no such table: missing")
    }

    /// Two processes creating one database together: the one that links its database first wins,
    /// and the other's step, built aside and thrown away, runs again on the winner's database,
    /// where it finds the creation applied. The other process is a second coordinator and store
    /// here, run from inside the first creation's seed.
    @Test func aCreationAnotherProcessLinkedFirstRunsAgainOnItsDatabase() throws {
        let url = scratch.file("library.sqlite")
        let seeds = Locked(0)
        let winner = Locked<MigrationCoordinator?>(nil)
        let seed: @Sendable (Database) throws -> Void = { _ in
            seeds.value += 1
            guard let other = winner.value else { return }
            winner.value = nil
            guard try other.run().succeeded else { throw TestFailure(message: "the other process's creation failed") }
        }
        winner.value = try Self.creatingRelease(at: url, seed: seed)

        let report = try Self.creatingRelease(at: url, seed: seed).run()

        #expect(report.steps.map(\.outcome) == [.alreadyApplied(level: "2.0")])
        #expect(seeds.value == 2)
        #expect(try RawSQLite.strings("SELECT title FROM note", at: url.path) == ["Welcome"])
        #expect(try RawSQLite.recordedVersions(at: url.path) == ["1.0", "2.0"])
        #expect(try scratch.names().filter { $0.contains(".creating") } == [])
    }

    /// Eight threads, each with a coordinator and store of its own, create one database together:
    /// every run succeeds, one creation is applied and the others find it applied (or nothing to
    /// do), and the database holds the seed's row once.
    @Test func creationsOfOneDatabaseTogetherApplyItOnce() throws {
        let url = scratch.file("library.sqlite")
        let outcomes = EventLog()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            do {
                outcomes.append(try Self.creatingRelease(at: url).run().steps.map { "\($0.outcome)" }.joined())
            } catch {
                outcomes.append("\(error)")
            }
        }
        #expect(outcomes.all.filter { $0 == "applied" }.count == 1, "\(outcomes.all)")
        #expect(outcomes.all.allSatisfy { $0 == "applied" || $0.hasPrefix("alreadyApplied") || $0.isEmpty }, "\(outcomes.all)")
        #expect(try RawSQLite.strings("SELECT title FROM note", at: url.path) == ["Welcome"])
        #expect(try RawSQLite.recordedVersions(at: url.path) == ["1.0", "2.0"])
        #expect(try scratch.names().filter { $0.contains(".creating") } == [])
    }

    /// The ID of a process that has exited and been waited for.
    static func deadProcessID() throws -> pid_t {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "exit 0"]
        try process.run()
        process.waitUntilExit()
        return process.processIdentifier
    }
}
