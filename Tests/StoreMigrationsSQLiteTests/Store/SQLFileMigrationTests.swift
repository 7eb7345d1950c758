import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// A folder of `V<version>__<name>.sql` files registered on a SQLite store: names and
/// fingerprints from the files, an edited applied file reported, refused under `.fail` before any
/// body, accepted by a repair; the history tables of the previous release read without a change.
@Suite struct SQLFileMigrationTests {
    let folder: TemporaryFolder
    let migrations: URL

    init() throws {
        folder = try TemporaryFolder()
        migrations = folder.file("migrations")
        try FileManager.default.createDirectory(at: migrations, withIntermediateDirectories: true)
        try write("V1.0__create_notes.sql", "CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT NOT NULL);\n")
        try write("V1.1__add_guid.sql", "ALTER TABLE note ADD COLUMN guid TEXT;\n")
        try write("README.md", "Not a migration.")
    }

    var store: SQLiteStore { SQLiteStore(url: folder.file("library.sqlite")) }

    func write(_ name: String, _ text: String) throws {
        try text.write(to: migrations.appendingPathComponent(name), atomically: true, encoding: .utf8)
    }

    func launch(_ appVersion: Version, policy: FingerprintPolicy = .warn) throws -> (MigrationCoordinator, MigrationManager<SQLiteStore>) {
        let coordinator = MigrationCoordinator(appVersion: appVersion)
        let library = try coordinator.manager("library", store: store)
        library.fingerprintPolicy = policy
        try library.registerSQLFiles(in: migrations)
        return (coordinator, library)
    }

    func history() throws -> [[String?]] {
        try store.read { db in
            try db.rows("SELECT version, name, fingerprint FROM store_migrations_history ORDER BY id").map { row in
                [try row[0] as String?, try row[1] as String?, try row[2] as String?]
            }
        }
    }

    @Test func filesRegisterWithTheirNamesAndTheHistoryKeepsNamesAndFingerprints() throws {
        let (coordinator, library) = try launch("1.1")
        #expect(try coordinator.plan().description == """
            Migration plan to app version 1.1: 2 steps in 2 waves.
              library (library.sqlite): level none, first launch (runAll), store does not exist: its first step creates it, \
            pending 1.0, 1.1
              wave 0: library@1.0 (create notes)
              wave 1: library@1.1 (add guid) after library@1.0
            """.replacingOccurrences(of: "library.sqlite", with: store.description))
        _ = try coordinator.run()
        #expect(try store.read { db in try db.tableInfo("note").map(\.name) } == ["id", "title", "guid"])
        #expect(try history() == [
            ["1.0", "create notes", MigrationFingerprint(of: "CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT NOT NULL);\n").rawValue],
            ["1.1", "add guid", MigrationFingerprint(of: "ALTER TABLE note ADD COLUMN guid TEXT;\n").rawValue],
        ])
        #expect(try library.record().applied.map(\.name) == ["create notes", "add guid"])
    }

    @Test func anEditedAppliedFileIsReportedRefusedBeforeAnyBodyAndAcceptedByARepair() throws {
        _ = try launch("1.1").0.run()
        try write("V1.1__add_guid.sql", "ALTER TABLE note ADD COLUMN guid TEXT NOT NULL DEFAULT '';\n")
        try write("V1.2__add_tags.sql", "CREATE TABLE tag(id INTEGER PRIMARY KEY);\n")

        let (warned, _) = try launch("1.2")
        let changes = try warned.plan().managers[0].changedFingerprints
        #expect(changes.map(\.migration.description) == ["library@1.1"])
        #expect(changes.map(\.name) == ["add guid"])
        #expect(changes.first?.current == MigrationFingerprint(of: "ALTER TABLE note ADD COLUMN guid TEXT NOT NULL DEFAULT '';\n"))

        let (refused, library) = try launch("1.2", policy: .fail)
        let error = try #require(throws: MigrationError.self) { try refused.run() }
        guard case let .fingerprintsChanged(manager, _, refusedChanges) = error else {
            Issue.record("unexpected \(error)")
            return
        }
        #expect(manager == "library" && refusedChanges == changes)
        #expect("\(error)".contains("library@1.1 (add guid): applied as v1:"))
        #expect(try store.read { db in try db.tableExists("tag") } == false, "no body may run")

        #expect(try library.repairFingerprints() == ["1.1"])
        _ = try refused.run()
        #expect(try store.read { db in try db.tableExists("tag") })
        #expect(try history().map { $0[2] } == [
            MigrationFingerprint(of: "CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT NOT NULL);\n").rawValue,
            MigrationFingerprint(of: "ALTER TABLE note ADD COLUMN guid TEXT NOT NULL DEFAULT '';\n").rawValue,
            MigrationFingerprint(of: "CREATE TABLE tag(id INTEGER PRIMARY KEY);\n").rawValue,
        ])
    }

    @Test func tablesOfThePreviousReleaseReadWithoutAChangeAndGainTheColumns() throws {
        // As the release before names and fingerprints left them: no name, no fingerprint column.
        try store.write { db in
            try db.execute("""
                CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT NOT NULL, guid TEXT);
                CREATE TABLE store_migrations_levels(
                    manager text PRIMARY KEY NOT NULL, level text, app_version text, baseline text, progress text);
                CREATE TABLE store_migrations_history(
                    id INTEGER PRIMARY KEY, manager text NOT NULL, version text NOT NULL,
                    applied_at TEXT NOT NULL, duration_seconds REAL NOT NULL);
                INSERT INTO store_migrations_levels VALUES ('library', '1.1', NULL, NULL, NULL);
                INSERT INTO store_migrations_history(manager, version, applied_at, duration_seconds) VALUES
                    ('library', '1.0', '2026-01-01T00:00:00.000Z', 0.01), ('library', '1.1', '2026-01-02T00:00:00.000Z', 0.02);
                """)
        }
        try write("V1.2__add_tags.sql", "CREATE TABLE tag(id INTEGER PRIMARY KEY);\n")
        let (coordinator, library) = try launch("1.2", policy: .fail)
        let plan = try coordinator.plan()
        #expect(plan.managers[0].changedFingerprints == [])
        #expect(plan.steps.map(\.title) == ["library@1.2 (add tags)"])
        #expect(try library.record().applied.map(\.fingerprint) == [nil, nil])
        _ = try coordinator.run()
        #expect(try history() == [
            ["1.0", nil, nil], ["1.1", nil, nil],
            ["1.2", "add tags", MigrationFingerprint(of: "CREATE TABLE tag(id INTEGER PRIMARY KEY);\n").rawValue],
        ])
    }

    @Test func aMisnamedFileIsATypedErrorNamingItAndItsFixAndNothingIsRegistered() throws {
        for (name, named, problem, fix) in [
            ("V1.2_add_tags.sql", "V1.2_add_tags.sql", "is not named V<version>__<name>.sql", "Rename it V1.2__add_tags.sql"),
            ("v1.2__add tags.sql", "v1.2__add tags.sql", "is not named V<version>__<name>.sql", "Rename it V1.2__add_tags.sql"),
            ("V1.2b__tags.sql", "V1.2b__tags.sql", "is not named V<version>__<name>.sql", "Rename it V<version>__<name>.sql, such as V1.1__add_guid.sql"),
            // Files of one version are named in the order of their names.
            ("V1.1.0__again.sql", "V1.1__add_guid.sql", "has version 1.1, as V1.1.0__again.sql has", "Give one of them another version, or merge them"),
        ] {
            try write(name, "SELECT 1;")
            defer { try? FileManager.default.removeItem(at: migrations.appendingPathComponent(name)) }
            let coordinator = MigrationCoordinator(appVersion: "2")
            let library = try coordinator.manager("library", store: store)
            let error = try #require(throws: SQLMigrationFileError.self) { try library.registerSQLFiles(in: migrations) }
            let path = migrations.appendingPathComponent(named).path
            #expect(error.description == "Migration file \(path) of manager \"library\" on \(store.description) \(problem). "
                + "Nothing of its folder was registered. \(fix).")
            #expect(try coordinator.plan().steps.isEmpty)
        }
    }

    @Test func aFileWithTheNoTransactionDirectiveRunsVacuumAndWithoutItTheStoreRefuses() throws {
        _ = try launch("1.1").0.run()
        try store.write { db in
            try db.execute("""
                CREATE TABLE scratch(data BLOB);
                INSERT INTO scratch SELECT zeroblob(4096) FROM (
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200) SELECT i FROM n);
                DELETE FROM scratch;
                """)
        }
        #expect(try store.read { db in try db.scalar("PRAGMA freelist_count", as: Int.self) ?? 0 } > 0)

        try write("V1.2__compact.sql", "VACUUM;\n")
        let (refused, _) = try launch("1.2")
        let error = try #require(throws: MigrationRunError.self) { try refused.run() }
        #expect((error.underlyingError as? SQLiteError)?.message == "cannot VACUUM from within a transaction")
        #expect(try store.readRecords()["library"]?.appliedVersions == ["1.0", "1.1"])

        let text = "-- Gives the deleted notes' pages back.\n-- store-migrations: no-transaction\n\nVACUUM;\n"
        try write("V1.2__compact.sql", text)
        let coordinator = MigrationCoordinator(appVersion: "1.2")
        let library = try coordinator.manager("library", store: store)
        #expect(try library.registerSQLFiles(in: migrations).map(\.transaction) == [.transactional, .transactional, .none])
        let report = try coordinator.run()
        #expect(report.steps.map(\.outcome) == [.applied])
        #expect(try store.read { db in try db.scalar("PRAGMA freelist_count", as: Int.self) } == 0, "VACUUM ran")
        #expect(try history().last == ["1.2", "compact", MigrationFingerprint(of: text).rawValue])
    }

    @Test func theDirectiveIsReadBelowOtherCommentsAndALicenceBlockInAnyCaseAfterAByteOrderMarkAndWindowsLineEndings() throws {
        try write("V1.2__compact.sql", "\u{FEFF}-- Compacts.\r\n\r\n  --Store-Migrations:no-transaction  \r\nVACUUM;\r\n")
        try write("V1.3__note.sql", "-- Not a directive: store-migrations: no-transaction\nSELECT 1;\n")
        try write("V1.4__licensed.sql", "/* Licence: MIT.\n   (c) 2026 */\n-- store-migrations: No-Transaction\nVACUUM;\n")
        try write("V1.5__inline.sql", "/* a comment */ SELECT 1;\n-- store-migrations: no-transaction\n")
        let library = try MigrationCoordinator(appVersion: "2").manager("library", store: store)
        #expect(throws: SQLMigrationFileError.self) { try library.registerSQLFiles(in: migrations) }
        try FileManager.default.removeItem(at: migrations.appendingPathComponent("V1.5__inline.sql"))
        #expect(try library.registerSQLFiles(in: migrations).map(\.transaction)
            == [.transactional, .transactional, .none, .transactional, .none])
    }

    @Test func anUnknownOrMisplacedDirectiveIsATypedErrorNamingTheFileAndItsFixAndNothingIsRegistered() throws {
        for (text, problem, fix) in [
            ("-- store-migrations: no-transacton\nVACUUM;\n",
             "has the unknown directive \"no-transacton\" in line 1",
             "Write -- store-migrations: no-transaction, the only directive there is"),
            ("VACUUM;\n-- store-migrations: no-transaction\n",
             "has the directive \"-- store-migrations: no-transaction\" in line 2, below its first statement",
             "Move it above the first statement"),
            ("-- no-transaction\nVACUUM;\n",
             "has sqlx's directive \"-- no-transaction\" in line 1, which this library does not read",
             "Write -- store-migrations: no-transaction instead"),
        ] {
            try write("V1.2__compact.sql", text)
            let coordinator = MigrationCoordinator(appVersion: "2")
            let library = try coordinator.manager("library", store: store)
            let error = try #require(throws: SQLMigrationFileError.self) { try library.registerSQLFiles(in: migrations) }
            let path = migrations.appendingPathComponent("V1.2__compact.sql").path
            #expect(error.description == "Migration file \(path) of manager \"library\" on \(store.description) \(problem). "
                + "Nothing of its folder was registered. \(fix).")
            #expect(try coordinator.plan().steps.isEmpty)
        }
    }

    @Test func aSQLMigrationRegisteredInCodeIsFingerprintedByItsText() throws {
        let coordinator = MigrationCoordinator(appVersion: "1")
        let library = try coordinator.manager("library", store: store)
        library.register("1", options: .named("create tags"), sql: "CREATE TABLE tag(id INTEGER PRIMARY KEY)")
        _ = try coordinator.run()
        #expect(try history() == [["1", "create tags", MigrationFingerprint(of: "CREATE TABLE tag(id INTEGER PRIMARY KEY)").rawValue]])
    }

    /// Each migration keeps its own fingerprint's text through whatever the manager does to its
    /// registrations: sorted into version order, a fingerprint given with the SQL, a migration
    /// without text between SQL ones, a squash standing in for migrations no longer registered.
    @Test func sqlMigrationsKeepTheirOwnFingerprintsWhenRegisteredOutOfOrderAmongOthers() throws {
        let coordinator = MigrationCoordinator(appVersion: "4")
        let library = try coordinator.manager("library", store: store)
        library.register("3", options: MigrationOptions.named("tags", fingerprint: "tags, v2"), sql: "CREATE TABLE tag(id INTEGER PRIMARY KEY)")
        library.register("2") { db in try db.execute("CREATE TABLE plain(id INTEGER PRIMARY KEY)") }
        library.squash(from: "0.1", through: "1") { db in try db.execute("CREATE TABLE note(id INTEGER PRIMARY KEY)") }
        library.register("4", options: MigrationOptions(), sql: "CREATE TABLE last(id INTEGER PRIMARY KEY)")
        library.register("1.5", options: MigrationOptions(), sql: "CREATE TABLE early(id INTEGER PRIMARY KEY)")
        _ = try coordinator.run()
        #expect(try history() == [
            ["1", nil, nil], ["1.5", nil, MigrationFingerprint(of: "CREATE TABLE early(id INTEGER PRIMARY KEY)").rawValue],
            ["2", nil, nil], ["3", "tags", MigrationFingerprint(of: "tags, v2").rawValue],
            ["4", nil, MigrationFingerprint(of: "CREATE TABLE last(id INTEGER PRIMARY KEY)").rawValue],
        ])
    }
}
