import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsPostgreSQL
import TestSupport

/// Squashed migrations on PostgreSQL: the squash's DDL and rows and the history rows of every
/// replaced migration commit in the step's one transaction, under the advisory lock, or none do.
@Suite struct PostgreSQLSquashTests {
    let database: PostgreSQLTestDatabase

    init() throws {
        database = try PostgreSQLTestDatabase()
    }

    func release(_ appVersion: Version, squash: Bool = true, failing: Bool = false) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: appVersion)
        let service = try coordinator.manager("service", store: database.store())
        service.register("1.0", options: .named("items")) { db in
            try db.execute("CREATE TABLE item(id bigint PRIMARY KEY, name text NOT NULL)")
        }
        service.register("1.1", options: .named("seed items", fingerprint: "two items")) { db in
            try db.execute("INSERT INTO item VALUES (1, 'one'), (2, 'two')")
        }
        service.register("1.2", options: .named("item notes")) { db in try db.execute("ALTER TABLE item ADD COLUMN note text") }
        if squash {
            service.squash(from: "1.0", through: "1.1", options: .named("items, seeded")) { db in
                try db.execute("CREATE TABLE item(id bigint PRIMARY KEY, name text NOT NULL)")
                try db.execute("INSERT INTO item VALUES (1, 'one'), (2, 'two')")
                try db.execute("CREATE TABLE squashed(id int)")
                if failing { throw SimulatedBodyFailure() }
            }
        }
        return coordinator
    }

    func record() throws -> MigrationRecord? { try database.store().readRecords()["service"] }

    @Test func aFreshDatabaseRunsTheSquashAndRecordsEachReplacedMigrationWithItsNameAndFingerprint() throws {
        let report = try release("1.2").run()
        #expect(report.steps.map(\.id.description) == ["service:squash@1.1", "service@1.2"])
        #expect(try database.tables().filter { !$0.hasPrefix("store_migrations") } == ["item", "squashed"])
        #expect(try database.columns(of: "item") == ["id", "name", "note"])
        #expect(try database.connect().scalar("SELECT count(*) FROM item", as: Int.self) == 2)
        let record = try #require(try record())
        #expect(record.applied.map(\.version) == ["1.0", "1.1", "1.2"])
        #expect(record.applied.map(\.name) == ["items", "seed items", "item notes"])
        #expect(record.appliedMigration("1.1")?.fingerprint == MigrationFingerprint(of: "two items"))
        #expect(try database.record(of: "service").history == ["1.0", "1.1", "1.2"])
    }

    @Test func aLongSquashRecordsEveryReplacedMigrationThroughInsertsOfManyRows() throws {
        // 70 rows: inserts of 32, 32, 4 and 2 rows, each row's parameters numbered on.
        let coordinator = MigrationCoordinator(appVersion: "70")
        let service = try coordinator.manager("service", store: database.store())
        for index in 1...70 {
            service.register(Version(index), options: .named("step \(index)", fingerprint: "text \(index)")) { _ in }
        }
        service.squash(from: "1", through: "70", options: .named("all of it")) { db in
            try db.execute("CREATE TABLE squashed(id int)")
        }
        #expect(try coordinator.run().steps.map(\.id.description) == ["service:squash@70"])
        let record = try #require(try record())
        #expect(record.applied.map(\.version) == (1...70).map { Version($0) })
        #expect(record.applied.map(\.name) == (1...70).map { "step \($0)" })
        #expect(record.applied.map(\.fingerprint) == (1...70).map { MigrationFingerprint(of: "text \($0)") })
        let ids = try database.connect().scalar(
            "SELECT string_agg(version, ',' ORDER BY id) FROM store_migrations_history WHERE manager = 'service'", as: String.self)
        #expect(ids == (1...70).map(String.init).joined(separator: ","), "rows inserted in version order")
    }

    @Test func aDatabasePartWayRunsTheReplacedMigrationsLeft() throws {
        #expect(try release("1.0", squash: false).run().succeeded)
        let report = try release("1.2").run()
        #expect(report.steps.map(\.id.description) == ["service@1.1", "service@1.2"])
        #expect(try database.tables().filter { !$0.hasPrefix("store_migrations") } == ["item"])
        #expect(try record()?.applied.map(\.version) == ["1.0", "1.1", "1.2"])
    }

    @Test func aDatabasePastTheRangeRunsNothingOfIt() throws {
        #expect(try release("1.1", squash: false).run().succeeded)
        let report = try release("1.2").run()
        #expect(report.steps.map(\.id.description) == ["service@1.2"])
        #expect(try database.tables().filter { !$0.hasPrefix("store_migrations") } == ["item"])
    }

    @Test func aSquashThatThrowsLeavesNeitherItsTablesNorAnyHistory() throws {
        #expect(try !runReport(of: release("1.2", failing: true)).succeeded)
        #expect(try database.tables().filter { !$0.hasPrefix("store_migrations") } == [])
        #expect(try record() == nil)
        #expect(try database.advisoryLocks() == 0)
        #expect(try release("1.2").run().steps.map(\.id.description) == ["service:squash@1.1", "service@1.2"])
        #expect(try database.connect().scalar("SELECT count(*) FROM item", as: Int.self) == 2)
    }
}
