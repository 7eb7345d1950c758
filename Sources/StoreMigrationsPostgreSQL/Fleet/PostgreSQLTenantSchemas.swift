import CLibPQ
import Foundation
import StoreMigrations

/// A fleet's tenants as the schemas of one PostgreSQL database: every schema whose name matches
/// a pattern, or the schemas a tenants table of the service's own lists. A tenant's key is its
/// schema's name; its stores come from ``store(for:lockTimeout:lockRetries:)``.
///
/// ```swift
/// let database = "host=db.internal dbname=saas"
/// let tenants = try PostgreSQLTenantSchemas(database, matching: "tenant_%", connections: 8)
/// let fleet = MigrationFleet(appVersion: "2.1", tenants: tenants) { tenant, coordinator in
///     let orders = try coordinator.manager("orders", store: tenants.store(for: tenant))
///     orders.register("2.0") { db in try db.execute("ALTER TABLE orders ADD COLUMN reference text") }
/// }
/// let report = try fleet.migrate(FleetRunOptions(maxTenantsInFlight: 16))
/// ```
///
/// ## Connections
///
/// The stores of every tenant share one pool of at most `connections` connections to the
/// database (or a run's ``/StoreMigrations/FleetRunOptions/maxConnections``), apart from the
/// fleet's cap on tenants in flight: a store borrows a connection for each read or step and
/// gives it back after, with its session's `search_path` set to the tenant's schema (then
/// `public`), so that a body's unqualified names are the tenant's. A tenant in flight waits for
/// a connection while all are in use. The walk over the schemas reads its pages on a session of
/// its own, outside the pool.
///
/// ## A stream, and records read ahead
///
/// Schemas are read a page at a time (``pageSize``, in the byte order of their names), never
/// listed whole, so a fleet of any size takes the same memory. With each page the source reads
/// the record tables of all its schemas in one query and keeps them for the stores' first reads:
/// a fleet's plan, or its check that every tenant is up to date, costs a few round trips per
/// page rather than a connection and a query per tenant. The next page is read while the fleet
/// works on the tenants of the one before. A store reads for itself after that first read, and
/// under its lock in every step.
public struct PostgreSQLTenantSchemas: TenantSource, ConnectionCappedTenantSource {
    /// Which schemas are tenants.
    enum Selection: Sendable, Hashable {
        /// The schemas whose name is `LIKE` this pattern (`tenant_%`).
        case pattern(String)
        /// The schemas named in a column of a table of the service's (`public.tenants`), each
        /// tenant in the group another column gives, if any.
        case table(String, schemaColumn: String, groupColumn: String?)
    }

    /// Which schemas are tenants.
    let selection: Selection
    /// How many schemas a page reads, with their records.
    public let pageSize: Int
    /// At most how many connections the tenants' stores hold open at once: the `connections`
    /// the source was made with, or a fleet run's ``/StoreMigrations/FleetRunOptions/maxConnections``
    /// while that run lasts.
    public var connections: Int { pool.limit }
    let connectionString: String
    let pool: PostgreSQLConnectionPool
    private let name: String
    /// The database and server, as a store of it describes them before its schema.
    private let database: String

    /// A source of the schemas of the database `connectionString` names whose name is `LIKE`
    /// `pattern`, their stores sharing at most `connections` connections.
    ///
    /// - Throws: ``PostgreSQLError`` with ``PostgreSQLError/Kind-swift.enum/invalidConnectionString``
    ///   when the string does not parse.
    public init(_ connectionString: String, matching pattern: String, connections: Int = 8, pageSize: Int = 500) throws {
        try self.init(connectionString, selection: .pattern(pattern), connections: connections, pageSize: pageSize)
    }

    /// A source of the schemas `table` lists in `schemaColumn`, each in the group
    /// `groupColumn` gives if named, their stores sharing at most `connections` connections.
    public init(
        _ connectionString: String, table: String, schemaColumn: String = "schema_name", groupColumn: String? = nil,
        connections: Int = 8, pageSize: Int = 500
    ) throws {
        try self.init(
            connectionString, selection: .table(table, schemaColumn: schemaColumn, groupColumn: groupColumn),
            connections: connections, pageSize: pageSize)
    }

    private init(_ connectionString: String, selection: Selection, connections: Int, pageSize: Int) throws {
        // Parsed now, so that a bad string fails here rather than at the first tenant.
        let probe = try PostgreSQLStore(connectionString)
        self.connectionString = connectionString
        self.selection = selection
        self.pageSize = max(1, pageSize)
        pool = PostgreSQLConnectionPool(limit: connections)
        let database = probe.description.replacingOccurrences(of: ", schema public", with: "")
        self.database = database
        switch selection {
        case .pattern(let pattern): name = "the schemas LIKE '\(pattern)' of \(database)"
        case let .table(table, column, _): name = "the schemas listed in \(table).\(column) of \(database)"
        }
    }

    public var description: String { name }

    /// What the store of `schema` calls itself, without parsing the connection string again.
    func storeDescription(schema: String) -> String {
        "\(database), schema \(schema)"
    }

    package func capConnections(perDatabase cap: Int) -> Int? {
        defer { pool.limit = cap }
        return pool.limit
    }

    /// The store of `tenant`'s schema, sharing the source's connections. Its record tables live
    /// in the schema, created by its first step.
    public func store(
        for tenant: Tenant, lockTimeout: Duration = .seconds(120), lockRetries: PostgreSQLStore.LockRetries = .standard
    ) throws -> PostgreSQLStore {
        try PostgreSQLStore(connectionString, schema: tenant.key, sharing: pool, lockTimeout: lockTimeout, lockRetries: lockRetries)
    }

    /// Starts a walk over the schemas, on a connection of its own, opened at the first page.
    public func makeTenantIterator() throws -> Iterator {
        Iterator(source: self)
    }

    /// A walk over the schemas, one page at a time.
    public struct Iterator: TenantIterator {
        private let source: PostgreSQLTenantSchemas
        private var reader: PageReader?
        private var page: [Tenant] = []
        private var index = 0
        private var last: String?
        private var isDone = false

        init(source: PostgreSQLTenantSchemas) {
            self.source = source
        }

        /// The next schema's tenant, or `nil` after the last.
        ///
        /// - Throws: ``PostgreSQLError`` naming the source when the database cannot be read.
        public mutating func next() throws -> Tenant? {
            if index == page.count {
                guard !isDone else { return nil }
                let reader = try self.reader ?? PageReader(source: source)
                self.reader = reader
                page = try reader.page(after: last)
                index = 0
                last = page.last?.key
                if page.count < source.pageSize { isDone = true }
                guard !page.isEmpty else { return nil }
            }
            defer { index += 1 }
            return page[index]
        }
    }

    /// Reads pages of schemas and their records on one connection, the next page while the
    /// fleet works on the tenants of the one before: the server reads a page's record tables
    /// while the fleet plans the tenants it already has.
    final class PageReader {
        private let source: PostgreSQLTenantSchemas
        private let reading: PageReading
        /// The reads of this walk, one at a time, in order.
        private let queue = DispatchQueue(label: "StoreMigrations.PostgreSQLTenantSchemas.pages")
        /// The page being read ahead: the key it comes after, and where its read ends.
        private var ahead: (last: String, page: PendingPage)?

        init(source: PostgreSQLTenantSchemas) throws {
            self.source = source
            reading = try PageReading(source: source)
        }

        /// The schemas after `last`; their records, read ahead into the source's pool.
        func page(after last: String?) throws -> [Tenant] {
            let page: PageReading.Page
            if let ahead, ahead.last == last {
                page = try ahead.page.wait()
            } else {
                // Queued behind any read ahead: the connection serves one read at a time.
                page = try queue.sync { [reading] in try reading.page(after: last) }
            }
            ahead = nil
            if page.tenants.count == source.pageSize, let next = page.tenants.last?.key {
                let pending = PendingPage()
                queue.async { [reading] in pending.end(Result { try reading.page(after: next) }) }
                ahead = (next, pending)
            }
            // Handed to the pool only now, not when read: the pool keeps two pages, and the
            // tenants of the page before may still be in flight.
            source.pool.readAhead(page.records)
            return page.tenants
        }
    }

    /// A page read on the reader's queue, waited for by the walk.
    final class PendingPage: @unchecked Sendable {
        // @unchecked: `result` is written once, before `done` is signalled, and read after.
        private let done = DispatchSemaphore(value: 0)
        private var result: Result<PageReading.Page, any Error>?

        func end(_ result: Result<PageReading.Page, any Error>) {
            self.result = result
            done.signal()
        }

        func wait() throws -> PageReading.Page {
            done.wait()
            return try result!.get()
        }
    }

    /// The reads of pages on one connection, which the reader's queue runs one at a time.
    final class PageReading: @unchecked Sendable {
        // @unchecked: `connection` is used by one thread at a time, the reader's queue's.
        private let source: PostgreSQLTenantSchemas
        private let connection: PostgreSQLConnection

        /// A page of schemas and the records read of them.
        struct Page {
            var tenants: [Tenant]
            var records: [String: [String: MigrationRecord]]
        }

        init(source: PostgreSQLTenantSchemas) throws {
            self.source = source
            connection = try PostgreSQLConnection(
                parameters: try PostgreSQLStore(source.connectionString).parameters, store: source.description)
        }

        /// The schemas after `last`, and their records.
        func page(after last: String?) throws -> Page {
            let names: String
            switch source.selection {
            case .pattern(let pattern):
                names = """
                    SELECT nspname::text AS name, NULL::text AS "group" FROM pg_namespace
                    WHERE nspname LIKE \(Self.literal(pattern)) AND ($1::text IS NULL OR nspname::text > $1 COLLATE "C")
                    ORDER BY nspname::text COLLATE "C" LIMIT \(source.pageSize)
                    """
            case let .table(table, column, group):
                let key = PostgreSQLConnection.quoted(column)
                let groupValue = group.map { PostgreSQLConnection.quoted($0) + "::text" } ?? "NULL::text"
                let qualifiedTable = table.split(separator: ".").map { PostgreSQLConnection.quoted(String($0)) }.joined(separator: ".")
                names = """
                    SELECT \(key)::text AS name, \(groupValue) AS "group" FROM \(qualifiedTable)
                    WHERE $1::text IS NULL OR \(key)::text > $1 COLLATE "C"
                    ORDER BY \(key)::text COLLATE "C" LIMIT \(source.pageSize)
                    """
            }
            // The tables looked up for the page's schemas alone: in the same query level as the
            // `LIMIT`, the server looked them up for every schema after `last`, before sorting.
            let sql = """
                SELECT name, "group", \(Self.tableFlags("name")) FROM (\(names)) page ORDER BY name COLLATE "C"
                """
            let rows = try connection.rows(sql, arguments: [last.map { .text($0) } ?? .null])
            var tenants: [Tenant] = []
            var withLevels: [RecordTables] = []
            for row in rows {
                let schema: String = try row[0]
                tenants.append(Tenant(schema, group: try row[1]))
                if try row[2] as Bool {
                    withLevels.append(RecordTables(schema: schema, hasHistory: try row[3], isCurrent: try row[4]))
                }
            }
            var records: [String: [String: MigrationRecord]] = [:]
            for tenant in tenants { records[tenant.key] = [:] }
            if !withLevels.isEmpty {
                for schema in withLevels.map(\.schema) { records[schema] = nil }
                // A schema dropped since the page was listed fails the whole read: its stores
                // then read for themselves, as every store does without a read ahead.
                for (schema, record) in (try? readRecords(of: withLevels)) ?? [:] { records[schema] = record }
            }
            return Page(tenants: tenants, records: records)
        }

        /// A schema's record tables, as the page's query found them.
        struct RecordTables {
            var schema: String
            var hasHistory: Bool
            /// Whether the tables have every column this release reads: those of an earlier
            /// release are read through their rows' JSON, which names no column that may be missing.
            var isCurrent: Bool
        }

        /// The records of `schemas`, all in one round trip: a statement per table, sent
        /// together. One `UNION ALL` of every schema's tables cost the server ten times more:
        /// planning the union of a page's tables outweighed reading their few rows. Neither
        /// `ORDER BY` nor the rows' JSON where the columns are there: on the walk's new session,
        /// each made the server look up more of each table's catalog entries than reading its
        /// rows costs; the history's ids say its order.
        private func readRecords(of schemas: [RecordTables]) throws -> [String: [String: MigrationRecord]] {
            var statements = ["BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"]
            for tables in schemas {
                let quoted = PostgreSQLConnection.quoted(tables.schema)
                let progress = tables.isCurrent ? "progress" : "to_jsonb(l) ->> 'progress'"
                statements.append("SELECT manager, level, app_version, baseline, \(progress) FROM \(quoted).\(PostgreSQLStore.levelsTable) l")
                if tables.hasHistory {
                    let labels = tables.isCurrent ? "name, fingerprint" : "j ->> 'name', j ->> 'fingerprint'"
                    let from = tables.isCurrent ? "" : ", LATERAL to_jsonb(h) j"
                    statements.append(
                        "SELECT manager, version, extract(epoch FROM applied_at)::float8, duration_seconds, \(labels), id FROM "
                            + "\(quoted).\(PostgreSQLStore.historyTable) h\(from)")
                }
            }
            statements.append("COMMIT")
            let results: [[PostgreSQLRow]]
            do {
                results = try connection.queryEach(statements.joined(separator: ";\n"))
            } catch {
                if connection.transactionStatus != PQTRANS_IDLE { try? connection.execute("ROLLBACK") }
                throw error
            }
            var records: [String: [String: MigrationRecord]] = [:]
            var next = 1
            for tables in schemas {
                let levels = results[next]
                let history = tables.hasHistory ? results[next + 1] : []
                next += tables.hasHistory ? 2 : 1
                // A schema whose records do not decode is not read ahead: its store reads them
                // itself and throws its own error, for its tenant alone.
                records[tables.schema] = try? PostgreSQLStore.decodeRecords(
                    levels: levels, history: PostgreSQLStore.inIDOrder(history, idColumn: 6),
                    store: source.storeDescription(schema: tables.schema))
            }
            return records
        }

        /// Whether a schema named by `expression` has the levels table, the history table, and
        /// every column this release reads in both (a history table missing counts as complete).
        private static func tableFlags(_ expression: String) -> String {
            let levels = "to_regclass(quote_ident(\(expression)::text) || '.\(PostgreSQLStore.levelsTable)')"
            let history = "to_regclass(quote_ident(\(expression)::text) || '.\(PostgreSQLStore.historyTable)')"
            return "\(levels) IS NOT NULL, \(history) IS NOT NULL, "
                + "(SELECT count(*) FROM pg_attribute WHERE NOT attisdropped AND ((attrelid = \(levels) AND attname = 'progress') "
                + "OR (attrelid = \(history) AND attname IN ('name', 'fingerprint')))) = "
                + "CASE WHEN \(history) IS NULL THEN 1 ELSE 3 END"
        }

        /// `text` as a string literal.
        static func literal(_ text: String) -> String {
            "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
        }
    }
}
