import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// Foreign-key checks chosen per migration, over the store's own choice: GRDB's cases (deferred
/// by default, immediate for one migration, deferred checks disabled, immediate where the rest
/// is disabled), through a coordinator on a real file.
@Suite struct SQLiteForeignKeyCheckTests {
    let scratch: TemporaryFolder
    let url: URL

    init() throws {
        scratch = try TemporaryFolder()
        url = scratch.file("library.sqlite")
        try Self.seed(url)
    }

    static func seed(_ url: URL) throws {
        try SQLiteStore(url: url).write { db in
            try db.execute("""
                CREATE TABLE author(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
                CREATE TABLE book(id INTEGER PRIMARY KEY, title TEXT, author_id INTEGER NOT NULL REFERENCES author(id) ON DELETE CASCADE);
                INSERT INTO author VALUES (1, 'Le Guin');
                INSERT INTO book VALUES (1, 'The Dispossessed', 1);
                """)
        }
    }

    /// Runs one migration `2.0` with `check`, on a store whose own check is `storeCheck`.
    func run(
        at url: URL? = nil, storeCheck: SQLiteStore.ForeignKeyCheck = .deferred, check: SQLiteStore.ForeignKeyCheck?,
        _ body: @escaping @Sendable (Database) throws -> Void
    ) throws -> (SQLiteStore, Result<MigrationReport, any Error>) {
        let store = SQLiteStore(url: url ?? self.url, foreignKeyCheck: storeCheck)
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let library = try coordinator.manager("library", store: store)
        library.firstLaunchPolicy = .runAll
        if let check {
            library.register("2.0", foreignKeyCheck: check) { db in try body(db) }
        } else {
            library.register("2.0") { db in try body(db) }
        }
        return (store, Result { try coordinator.run() })
    }

    func books(_ store: SQLiteStore) throws -> [String] {
        try store.read { db in try db.rows("SELECT title || ':' || author_id FROM book ORDER BY id").map { try $0[0] as String } }
    }

    func level(_ store: SQLiteStore) throws -> Version? {
        try store.readRecords()["library"]?.level
    }

    /// The failed step's error, unwrapped from the run's error.
    func stepError(_ result: Result<MigrationReport, any Error>) throws -> SQLiteError {
        guard case .failure(let error) = result else { throw TestFailure(message: "the run succeeded: \(result)") }
        let runError = try #require(error as? MigrationRunError)
        return try #require(runError.underlyingError as? SQLiteError)
    }

    @Test func deferredAllowsAViolationTheStepRepairsBeforeItEnds() throws {
        let (store, result) = try run(check: .deferred) { db in
            try db.execute("INSERT INTO book VALUES (2, 'Kindred', 2)")     // no author 2 yet
            try db.execute("INSERT INTO author VALUES (2, 'Butler')")
        }
        _ = try result.get()
        #expect(try books(store) == ["The Dispossessed:1", "Kindred:2"])
        #expect(try level(store) == "2.0")
    }

    @Test func deferredRefusesAViolationLeftAtTheEndAndKeepsNothing() throws {
        let (store, result) = try run(check: .deferred) { db in
            try db.execute("INSERT INTO book VALUES (2, 'Kindred', 2)")
        }
        let error = try stepError(result)
        #expect(error.isForeignKeyViolation)
        #expect(error.foreignKeyViolations == [ForeignKeyViolation(table: "book", rowID: 2, parentTable: "author", foreignKeyID: 0)])
        #expect(try books(store) == ["The Dispossessed:1"])
        #expect(try level(store) == nil)
    }

    @Test func immediateRefusesTheViolatingStatementEvenIfALaterOneWouldRepairIt() throws {
        let (store, result) = try run(check: .immediate) { db in
            try db.execute("INSERT INTO book VALUES (2, 'Kindred', 2)")
            try db.execute("INSERT INTO author VALUES (2, 'Butler')")
        }
        let error = try stepError(result)
        #expect(error.isForeignKeyViolation)
        #expect(error.sql == "INSERT INTO book VALUES (2, 'Kindred', 2)")
        #expect(try books(store) == ["The Dispossessed:1"])
        #expect(try level(store) == nil)
    }

    @Test func immediateRunsCascadesThatDeferredDoesNot() throws {
        let (immediateStore, immediate) = try run(check: .immediate) { db in try db.execute("DELETE FROM author WHERE id = 1") }
        _ = try immediate.get()
        #expect(try books(immediateStore) == [], "the cascade deleted the book")
        let other = scratch.file("other.sqlite")
        try Self.seed(other)
        let (deferredStore, deferred) = try run(at: other, check: .deferred) { db in try db.execute("DELETE FROM author WHERE id = 1") }
        #expect(try stepError(deferred).isForeignKeyViolation, "no cascade: the orphan fails the final check")
        #expect(try books(deferredStore) == ["The Dispossessed:1"])
    }

    @Test func disabledCommitsAViolationAndRecordsTheStep() throws {
        let (store, result) = try run(check: .disabled) { db in
            try db.execute("INSERT INTO book VALUES (2, 'Kindred', 2)")
        }
        _ = try result.get()
        #expect(try books(store) == ["The Dispossessed:1", "Kindred:2"])
        #expect(try level(store) == "2.0")
        #expect(try store.read { db in try db.foreignKeyViolations() }.map(\.rowID) == [2])
        #expect(try store.read { try $0.pragmaFlag("foreign_keys") }, "enforcement is back on after the step")
    }

    @Test func aMigrationsOwnCheckOverridesTheStores() throws {
        // The store disables checks; this one migration wants them as statements run.
        let (store, result) = try run(storeCheck: .disabled, check: .immediate) { db in
            try db.execute("INSERT INTO book VALUES (2, 'Kindred', 2)")
        }
        #expect(try stepError(result).sql == "INSERT INTO book VALUES (2, 'Kindred', 2)")
        #expect(try level(store) == nil)
        // The store's own check applies to migrations registered without one.
        let (_, unchecked) = try run(storeCheck: .disabled, check: nil) { db in
            try db.execute("INSERT INTO book VALUES (2, 'Kindred', 2)")
        }
        _ = try unchecked.get()
        #expect(try books(store) == ["The Dispossessed:1", "Kindred:2"])
    }

    /// The check belongs to the registration, not to the store object: a later coordinator on
    /// the same store object that registers the migration without one gets the store's check.
    @Test func aMigrationsCheckDoesNotCarryOverToALaterRegistrationOnTheSameStore() throws {
        let store = SQLiteStore(url: url, foreignKeyCheck: .disabled)
        let checked = MigrationCoordinator(appVersion: "2.0")
        try checked.manager("library", store: store).register("2.0", foreignKeyCheck: .immediate) { db in
            try db.execute("INSERT INTO book VALUES (2, 'Kindred', 2)")
        }
        #expect(throws: MigrationRunError.self) { try checked.run() }
        let plain = MigrationCoordinator(appVersion: "2.0")
        try plain.manager("library", store: store).register("2.0") { db in
            try db.execute("INSERT INTO book VALUES (2, 'Kindred', 2)")
        }
        _ = try plain.run()
        #expect(try books(store) == ["The Dispossessed:1", "Kindred:2"], "the store's disabled check applied")
    }
}
