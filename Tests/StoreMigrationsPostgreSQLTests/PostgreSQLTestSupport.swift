import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsPostgreSQL
import TestSupport

/// A database of its own on the shared test server, for one test.
struct PostgreSQLTestDatabase {
    let server: PostgreSQLServer
    let name: String

    init(server: PostgreSQLServer? = nil) throws {
        self.server = try server ?? PostgreSQLServer.start()
        name = try self.server.makeDatabase()
    }

    var connectionString: String { server.connectionString(database: name) }

    func store(schema: String = "public", lockTimeout: Duration = .seconds(30)) throws -> PostgreSQLStore {
        try PostgreSQLStore(connectionString, schema: schema, lockTimeout: lockTimeout)
    }

    func connect() throws -> PostgreSQLConnection { try server.connect(database: name) }

    /// The tables of `schema`, sorted.
    func tables(in schema: String = "public") throws -> [String] {
        try connect().rows(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name", arguments: [.text(schema)]
        ).map { try $0[0] as String }
    }

    /// The columns of `table`, in order.
    func columns(of table: String) throws -> [String] {
        try connect().rows(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position",
            arguments: [.text(table)]
        ).map { try $0[0] as String }
    }

    /// The advisory locks held or awaited in this database.
    func advisoryLocks() throws -> Int {
        try connect().scalar(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = $1)",
            arguments: [.text(name)], as: Int.self) ?? 0
    }

    /// `manager`'s rows of the levels and history tables: (level, versions in history order).
    func record(of manager: String) throws -> (level: String?, history: [String]) {
        let db = try connect()
        let level = try db.scalar("SELECT level FROM store_migrations_levels WHERE manager = $1", arguments: [.text(manager)], as: String.self)
        let history = try db.rows(
            "SELECT version FROM store_migrations_history WHERE manager = $1 ORDER BY id", arguments: [.text(manager)]
        ).map { try $0[0] as String }
        return (level, history)
    }
}

/// Counts calls across threads.
final class CallCounter: @unchecked Sendable {
    // `lock` guards `counts`.
    private let lock = NSLock()
    private var counts: [String: Int] = [:]

    func hit(_ name: String) { lock.withLock { counts[name, default: 0] += 1 } }
    subscript(_ name: String) -> Int { lock.withLock { counts[name, default: 0] } }
}
