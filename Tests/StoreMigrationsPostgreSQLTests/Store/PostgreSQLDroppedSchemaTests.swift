import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsPostgreSQL
import TestSupport

/// A store whose schema is dropped behind its connection (the testing kit's `discard`, an
/// operator's `DROP SCHEMA … CASCADE`): the same store object migrates it again from nothing.
@Suite struct PostgreSQLDroppedSchemaTests {
    private static let schema = "migrations"

    /// A coordinator of two steps, each creating a table in the store's schema and counting its runs.
    private func launch(_ store: PostgreSQLStore, calls: CallCounter, secondStep: TransactionMode = .transactional) throws -> MigrationReport {
        let coordinator = MigrationCoordinator(appVersion: "2")
        let service = try coordinator.manager("service", store: store)
        service.register("1") { db in
            calls.hit("1")
            try db.execute("CREATE TABLE migrations.account(id int PRIMARY KEY)")
        }
        service.register("2", transaction: secondStep) { db in
            calls.hit("2")
            try db.execute("INSERT INTO migrations.account VALUES (1), (2)")
        }
        return try coordinator.run()
    }

    /// The levels row and history of `service` in the store's schema.
    private func record(in database: PostgreSQLTestDatabase) throws -> (level: String?, history: [String]) {
        let db = try database.connect()
        let level = try db.scalar(
            "SELECT level FROM migrations.store_migrations_levels WHERE manager = 'service'", as: String.self)
        let history = try db.rows("SELECT version FROM migrations.store_migrations_history WHERE manager = 'service' ORDER BY id")
            .map { try $0[0] as String }
        return (level, history)
    }

    @Test(arguments: [TransactionMode.transactional, .none])
    func aSchemaDroppedByAnotherConnectionIsMigratedAgainByTheSameStore(secondStep: TransactionMode) throws {
        let database = try PostgreSQLTestDatabase()
        let store = try database.store(schema: Self.schema)
        let calls = CallCounter()
        #expect(try launch(store, calls: calls, secondStep: secondStep).steps.map(\.outcome) == [.applied, .applied])

        try database.connect().execute("DROP SCHEMA migrations CASCADE")

        let again = try launch(store, calls: calls, secondStep: secondStep)
        #expect(again.steps.map(\.step.id.description) == ["service@1", "service@2"])
        #expect(again.steps.map(\.outcome) == [.applied, .applied])
        #expect(calls["1"] == 2 && calls["2"] == 2)
        #expect(try record(in: database).level == "2")
        #expect(try record(in: database).history == ["1", "2"])
        #expect(try database.connect().scalar("SELECT count(*) FROM migrations.account", as: Int.self) == 2)
        #expect(try database.advisoryLocks() == 0)
    }

    /// The testing kit drops the schema on the store's own connection, between runs.
    @Test func aSchemaDroppedOnTheStoresOwnConnectionIsMigratedAgain() throws {
        let database = try PostgreSQLTestDatabase()
        let store = try database.store(schema: Self.schema)
        let calls = CallCounter()
        _ = try launch(store, calls: calls)
        try store.withSession { db in try db.execute("DROP SCHEMA migrations CASCADE") }
        #expect(try store.readRecords().isEmpty)

        let again = try launch(store, calls: calls)
        #expect(again.steps.map(\.outcome) == [.applied, .applied])
        #expect(try record(in: database).history == ["1", "2"])
        #expect(try store.readRecords()["service"]?.applied.map(\.version) == ["1", "2"])
    }

    /// A body's own statement on a missing table is the body's error, never retried as the store's.
    @Test func aBodysMissingTableAfterADropIsItsOwnErrorAndRunsOnce() throws {
        let database = try PostgreSQLTestDatabase()
        let store = try database.store(schema: Self.schema)
        _ = try launch(store, calls: CallCounter())
        try database.connect().execute("DROP SCHEMA migrations CASCADE")

        let calls = CallCounter()
        let coordinator = MigrationCoordinator(appVersion: "1")
        let service = try coordinator.manager("service", store: store)
        service.register("1") { db in
            calls.hit("1")
            try db.execute("INSERT INTO migrations.missing VALUES (1)")
        }
        let error = try #require(throws: MigrationRunError.self) { try coordinator.run() }
        #expect((error.underlyingError as? PostgreSQLError)?.sqlState == "42P01")
        #expect(calls["1"] == 1)
    }
}
