import Foundation
import Testing
import StoreMigrations
import StoreMigrationsPostgreSQL
import TestSupport

/// Development mode never erases a PostgreSQL schema: the database is shared by other developers'
/// processes and services, so an edited migration is refused with a typed error and nothing of
/// the schema changes.
@Suite struct PostgreSQLEraseRefusalTests {
    @Test func anEditedMigrationIsRefusedAndTheSchemaKept() throws {
        let database = try PostgreSQLTestDatabase()
        func launch(_ sql: String) throws -> (MigrationCoordinator, MigrationManager<PostgreSQLStore>) {
            let coordinator = MigrationCoordinator(appVersion: "1.1")
            coordinator.developmentMode = .eraseOnFingerprintChange
            let service = try coordinator.manager("service", store: database.store())
            service.register("1.0", options: .named("create orders"), sql: sql)
            service.register("1.1", options: .named("add index"), sql: "CREATE INDEX orders_by_id ON orders(id)")
            return (coordinator, service)
        }
        let original = "CREATE TABLE orders(id bigint PRIMARY KEY)"
        try launch(original).0.run()
        let edited = "CREATE TABLE orders(id bigint PRIMARY KEY, total numeric)"
        let (coordinator, service) = try launch(edited)
        let store = try database.store()
        let expected = DevelopmentModeError.eraseNotSupported(
            store: store.description,
            change: try #require(try coordinator.plan().managers[0].changedFingerprints.first))
        #expect(try coordinator.plan().managers[0].developmentErase == nil)
        #expect(throws: expected) { try coordinator.run() }
        #expect(expected.description.hasPrefix("Development mode would erase \(store.description) because service@1.0 "
            + "(create orders): applied as \(MigrationFingerprint(of: original)), now \(MigrationFingerprint(of: edited))"))
        let columns = try database.connect().rows(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'orders' AND table_schema = current_schema()"
        ).map { try $0[0] as String }
        #expect(columns == ["id"])
        #expect(try service.record().applied.count == 2)
    }
}
