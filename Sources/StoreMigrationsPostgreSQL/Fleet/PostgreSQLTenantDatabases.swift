import Foundation
import StoreMigrations

/// A fleet's tenants as the databases of one PostgreSQL server whose names match a pattern: a
/// tenant's key is its database's name; its stores come from ``store(for:schema:lockTimeout:lockRetries:)``.
///
/// ```swift
/// let server = "host=db.internal dbname=postgres"
/// let tenants = try PostgreSQLTenantDatabases(server, matching: "customer_%")
/// let fleet = MigrationFleet(appVersion: "2.1", tenants: tenants) { tenant, coordinator in
///     let orders = try coordinator.manager("orders", store: tenants.store(for: tenant))
///     orders.register("2.0") { db in try db.execute("ALTER TABLE orders ADD COLUMN reference text") }
/// }
/// ```
///
/// Databases are read a page at a time from `pg_database` (templates and databases that refuse
/// connections left out), never listed whole, on a session of the walk's own. The stores of one
/// database share a pool of at most `connections` connections to it (or a run's
/// ``/StoreMigrations/FleetRunOptions/maxConnections``); the pool goes with the last of its stores.
public struct PostgreSQLTenantDatabases: TenantSource, ConnectionCappedTenantSource {
    /// The `LIKE` pattern a database's name must match.
    public let pattern: String
    /// How many databases a page reads.
    public let pageSize: Int
    /// At most how many connections the stores of one database hold open at once: the
    /// `connections` the source was made with, or a fleet run's
    /// ``/StoreMigrations/FleetRunOptions/maxConnections`` while that run lasts.
    public var connections: Int { pools.limit }
    private let parameters: [(String, String)]
    private let pools: Pools
    private let name: String

    /// A source of the databases of the server `connectionString` reaches whose name is `LIKE`
    /// `pattern`; the string's own database is the one listed from.
    ///
    /// - Throws: ``PostgreSQLError`` with ``PostgreSQLError/Kind-swift.enum/invalidConnectionString``
    ///   when the string does not parse.
    public init(_ connectionString: String, matching pattern: String, connections: Int = 4, pageSize: Int = 500) throws {
        let probe = try PostgreSQLStore(connectionString)
        parameters = probe.parameters
        self.pattern = pattern
        self.pageSize = max(1, pageSize)
        pools = Pools(limit: connections)
        let server = probe.description.replacingOccurrences(of: #"PostgreSQL database \S+ on "#, with: "", options: .regularExpression)
            .replacingOccurrences(of: ", schema public", with: "")
        name = "the databases LIKE '\(pattern)' on \(server)"
    }

    public var description: String { name }

    package func capConnections(perDatabase cap: Int) -> Int? {
        pools.setLimit(cap)
    }

    /// A store of `schema` in `tenant`'s database, sharing that database's connections.
    public func store(
        for tenant: Tenant, schema: String = "public", lockTimeout: Duration = .seconds(120), lockRetries: PostgreSQLStore.LockRetries = .standard
    ) throws -> PostgreSQLStore {
        try PostgreSQLStore(
            connectionString(database: tenant.key), schema: schema, sharing: pools.pool(for: tenant.key),
            lockTimeout: lockTimeout, lockRetries: lockRetries)
    }

    /// The connection string of `database` on the source's server, with the source's settings.
    func connectionString(database: String) -> String {
        (parameters.filter { $0.0 != "dbname" } + [("dbname", database)])
            .map { "\($0.0)='" + $0.1.escapingASCII("\\'", with: "\\") + "'" }.joined(separator: " ")
    }

    /// Starts a walk over the databases, on a connection of its own, opened at the first page.
    public func makeTenantIterator() throws -> Iterator {
        Iterator(source: self)
    }

    /// A walk over the databases, one page at a time.
    public struct Iterator: TenantIterator {
        private let source: PostgreSQLTenantDatabases
        private var connection: PostgreSQLConnection?
        private var page: [Tenant] = []
        private var index = 0
        private var isDone = false

        init(source: PostgreSQLTenantDatabases) {
            self.source = source
        }

        /// The next database's tenant, or `nil` after the last.
        ///
        /// - Throws: ``PostgreSQLError`` naming the source when the server cannot be read.
        public mutating func next() throws -> Tenant? {
            if index == page.count {
                guard !isDone else { return nil }
                let connection = try self.connection ?? PostgreSQLConnection(parameters: source.parameters, store: source.description)
                self.connection = connection
                let rows = try connection.rows(
                    """
                    SELECT datname::text FROM pg_database
                    WHERE datname LIKE $1 AND NOT datistemplate AND datallowconn AND ($2::text IS NULL OR datname::text > $2 COLLATE "C")
                    ORDER BY datname::text COLLATE "C" LIMIT \(source.pageSize)
                    """, arguments: [.text(source.pattern), page.last.map { .text($0.key) } ?? .null])
                page = try rows.map { Tenant(try $0[0] as String) }
                index = 0
                if page.count < source.pageSize { isDone = true }
                guard !page.isEmpty else { return nil }
            }
            defer { index += 1 }
            return page[index]
        }
    }

    /// The pools of the databases whose stores are alive, each let go of with its last store.
    final class Pools: @unchecked Sendable {
        // @unchecked: `pools` and `storedLimit` are only touched with `lock` held.
        private let lock = NSLock()
        private var pools: [String: Weak] = [:]
        private var storedLimit: Int

        struct Weak {
            weak var pool: PostgreSQLConnectionPool?
        }

        init(limit: Int) {
            storedLimit = max(1, limit)
        }

        /// The limit of each database's pool.
        var limit: Int { lock.withLock { storedLimit } }

        /// Gives every pool alive, and those made from now on, the limit `limit`; returns the
        /// one it replaced.
        func setLimit(_ limit: Int) -> Int {
            let (replaced, alive) = lock.withLock {
                defer { storedLimit = max(1, limit) }
                return (storedLimit, pools.values.compactMap(\.pool))
            }
            for pool in alive { pool.limit = limit }
            return replaced
        }

        func pool(for database: String) -> PostgreSQLConnectionPool {
            lock.withLock {
                if let pool = pools[database]?.pool { return pool }
                let pool = PostgreSQLConnectionPool(limit: storedLimit)
                // Entries of pools gone are swept as they pile up: the map keeps pace with the
                // databases in flight, not with the fleet.
                if pools.count >= 64 { pools = pools.filter { $0.value.pool != nil } }
                pools[database] = Weak(pool: pool)
                return pool
            }
        }
    }
}
