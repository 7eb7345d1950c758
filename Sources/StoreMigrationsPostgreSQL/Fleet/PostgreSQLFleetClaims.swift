import CLibPQ
import Foundation
import StoreMigrations

/// A fleet's claims and results in a table of a PostgreSQL database every worker reaches, so
/// that worker processes on several machines run the same fleet at once, with no coordinator
/// process of their own: each tenant is migrated by one of them, and ``status(appVersion:)``
/// (``/StoreMigrations/MigrationFleet/status()``) shows from any machine who did what.
///
/// ```swift
/// let claims = try PostgreSQLFleetClaims("host=db.internal dbname=saas", fleet: "saas")
/// let fleet = MigrationFleet(appVersion: "2.1", tenants: tenants, claims: claims) { tenant, crm in
///     …   // the tenant's managers, registered on its coordinator `crm`
/// }
/// let report = try fleet.migrate()    // in each worker, on each machine
/// ```
///
/// ## A claim
///
/// A worker claims a tenant with steps to run by taking a session-level advisory lock named for
/// the fleet and the tenant (`pg_try_advisory_lock`, never waiting) on a connection of the
/// claims' own, then writing the tenant's row of `store_migrations_fleet` (fleet, app version,
/// tenant, state `running`, worker, start, attempts). When the tenant ends, the row gets its
/// state (`migrated` or `failed`), end and error, and the lock is let go of. A tenant whose lock
/// another worker holds is `busy`: the fleet tries it again after its walk, until it has ended.
///
/// ## A worker that dies
///
/// The lock belongs to the worker's session: when the worker dies the server ends the session
/// and frees the lock (at once for a process killed on a live host; after the TCP keepalives, about
/// 25 s, for a host that vanished), and the next worker to try the tenant takes it over, its
/// row still saying `running`. Each step the dead worker began was rolled back with its session
/// or committed with its record: the new worker's coordinator skips what is applied.
///
/// A row that ended (migrated or failed) before this worker started (before its claims were
/// made, by its own clock) is taken again when the tenant's plan still has steps: a rerun after
/// a failure, or after a migration added to the same app version. One that ended since is
/// another worker's, this run: a failed tenant is not tried again by every worker.
///
/// A row left `running` by a worker that died after its tenant's last step committed stays so
/// until a worker finds steps to run there: the tenant is up to date, and ``status(appVersion:)``
/// tells it apart from one a live worker holds (``/StoreMigrations/FleetStatus/State/interrupted``).
public final class PostgreSQLFleetClaims: FleetClaims, @unchecked Sendable {
    // @unchecked: `connection` is only touched with `lock` held; one thread uses it at a time.
    /// The fleet's name: the rows and locks of one fleet are not another's.
    public let fleet: String
    /// This worker's name in the claims: the host and process id unless given.
    public let worker: String
    /// The schema of the claims table.
    public let schema: String
    private let parameters: [(String, String)]
    private let database: String
    private let lock = NSLock()
    private var connection: PostgreSQLConnection?
    /// When this worker started (its claims were made), in seconds since 1970 on its own clock:
    /// rows ended before were ended by an earlier run.
    private let since = Date().timeIntervalSince1970

    static let table = "store_migrations_fleet"

    /// Claims of the fleet `fleet` kept in `schema` of the database `connectionString` names,
    /// for a worker called `worker` (the host and process id by default).
    ///
    /// - Throws: ``PostgreSQLError`` with ``PostgreSQLError/Kind-swift.enum/invalidConnectionString``
    ///   when the string does not parse. Nothing is opened until the first claim.
    public init(_ connectionString: String, fleet: String = "default", schema: String = "public", worker: String? = nil) throws {
        let probe = try PostgreSQLStore(connectionString, schema: schema)
        parameters = probe.parameters
        database = probe.description
        self.fleet = fleet
        self.schema = schema
        self.worker = worker ?? "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier)"
    }

    public var description: String { "the claims of fleet \(fleet) in \(database)" }

    private var qualifiedTable: String { PostgreSQLConnection.quoted(schema) + "." + PostgreSQLConnection.quoted(Self.table) }

    /// The advisory lock of `tenant` in this fleet.
    func key(of tenant: String) -> Int64 {
        AdvisoryLock.key(schema: fleet, table: tenant, purpose: "store_migrations_fleet")
    }

    public func claim(_ tenant: Tenant, appVersion: Version) throws -> FleetClaim {
        try withConnection { db, since in
            let key = key(of: tenant.key)
            guard try db.scalar("SELECT pg_try_advisory_lock($1)", arguments: [.integer(key)], as: Bool.self) == true else {
                return .busy
            }
            do {
                let taken = try db.rows(
                    """
                    INSERT INTO \(qualifiedTable) AS t (fleet, app_version, tenant, state, worker, started_at, attempts)
                    VALUES ($1, $2, $3, 'running', $4, now(), 1)
                    ON CONFLICT (fleet, app_version, tenant) DO UPDATE
                    SET state = 'running', worker = excluded.worker, started_at = now(), ended_at = NULL, message = NULL,
                        attempts = t.attempts + 1
                    WHERE t.state = 'running' OR t.ended_at < to_timestamp($5)
                    RETURNING attempts
                    """,
                    arguments: [.text(fleet), .text(appVersion.description), .text(tenant.key), .text(worker), .double(since)])
                if taken.isEmpty {
                    try db.execute("SELECT pg_advisory_unlock($1)", arguments: [.integer(key)])
                    return .endedElsewhere
                }
                return .claimed
            } catch {
                if !db.isBroken { _ = try? db.execute("SELECT pg_advisory_unlock($1)", arguments: [.integer(key)]) }
                throw error
            }
        }
    }

    public func release(_ tenant: Tenant, appVersion: Version, result: FleetClaimResult) throws {
        let (state, message): (String, String?) = switch result {
        case .migrated: ("migrated", nil)
        case .failed(let message): ("failed", message)
        }
        try withConnection { db, _ in
            _ = try db.execute(
                """
                UPDATE \(qualifiedTable) SET state = $4, ended_at = now(), message = $5
                WHERE fleet = $1 AND app_version = $2 AND tenant = $3 AND worker = $6
                """,
                arguments: [
                    .text(fleet), .text(appVersion.description), .text(tenant.key), .text(state), message.map { .text($0) } ?? .null,
                    .text(worker),
                ])
            try db.execute("SELECT pg_advisory_unlock($1)", arguments: [.integer(key(of: tenant.key))])
        }
    }

    public func status(appVersion: Version) throws -> FleetStatus {
        try withConnection { db, _ in
            let arguments: [PostgreSQLValue] = [.text(fleet), .text(appVersion.description)]
            let workers = try db.rows(
                """
                SELECT worker, count(*) FILTER (WHERE state = 'migrated'), count(*) FILTER (WHERE state = 'failed'),
                       count(*) FILTER (WHERE state = 'running'), extract(epoch FROM min(started_at))::float8,
                       extract(epoch FROM max(ended_at))::float8
                FROM \(qualifiedTable) WHERE fleet = $1 AND app_version = $2 GROUP BY worker ORDER BY worker
                """, arguments: arguments
            ).map { row in
                FleetStatus.Worker(
                    worker: try row[0], migrated: try row[1], failed: try row[2], running: try row[3],
                    firstStart: Date(timeIntervalSince1970: try row[4]), lastEnd: (try row[5] as Double?).map(Date.init(timeIntervalSince1970:)))
            }
            // The claims held now, to tell a live worker's tenant from a dead one's.
            let held = Set(try db.rows(
                """
                SELECT (classid::int8 << 32) | objid::int8 FROM pg_locks
                WHERE locktype = 'advisory' AND objsubid = 1 AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                """
            ).map { try $0[0] as Int64 })
            let entries = try db.rows(
                """
                SELECT tenant, state, worker, extract(epoch FROM started_at)::float8, extract(epoch FROM ended_at)::float8,
                       attempts, message
                FROM \(qualifiedTable) WHERE fleet = $1 AND app_version = $2 AND state <> 'migrated'
                ORDER BY tenant COLLATE "C"
                """, arguments: arguments
            ).map { row in
                let tenant: String = try row[0]
                var state = FleetStatus.State(rawValue: try row[1]) ?? .running
                if state == .running, !held.contains(key(of: tenant)) { state = .interrupted }
                return FleetStatus.Entry(
                    tenant: tenant, state: state, worker: try row[2],
                    startedAt: Date(timeIntervalSince1970: try row[3]),
                    endedAt: (try row[4] as Double?).map(Date.init(timeIntervalSince1970:)), attempts: try row[5], message: try row[6])
            }
            let ordered = [FleetStatus.State.running, .interrupted, .failed].flatMap { state in entries.filter { $0.state == state } }
            return FleetStatus(
                appVersion: appVersion, migrated: workers.reduce(0) { $0 + $1.migrated }, failed: workers.reduce(0) { $0 + $1.failed },
                running: entries.filter { $0.state == .running }.count, interrupted: entries.filter { $0.state == .interrupted }.count,
                workers: workers, entries: ordered)
        }
    }

    /// Runs `body` on the claims' connection, opening it (and creating the table) first if need be.
    private func withConnection<T>(_ body: (PostgreSQLConnection, Double) throws -> T) throws -> T {
        try lock.withLock {
            if let connection, connection.isBroken { self.connection = nil }
            let db: PostgreSQLConnection
            if let connection {
                db = connection
            } else {
                db = try PostgreSQLConnection(parameters: parameters, store: description)
                // Workers that start together create the table one at a time: `IF NOT EXISTS`
                // alone races on the catalog.
                try db.execute("""
                    BEGIN;
                    SELECT pg_advisory_xact_lock(\(AdvisoryLock.key(schema: schema, table: Self.table, purpose: "store_migrations_fleet")));
                    CREATE SCHEMA IF NOT EXISTS \(PostgreSQLConnection.quoted(schema));
                    CREATE TABLE IF NOT EXISTS \(qualifiedTable) (
                        fleet text NOT NULL, app_version text NOT NULL, tenant text NOT NULL, state text NOT NULL,
                        worker text NOT NULL, started_at timestamptz NOT NULL, ended_at timestamptz, attempts int NOT NULL,
                        message text, PRIMARY KEY (fleet, app_version, tenant));
                    COMMIT
                    """)
                connection = db
            }
            do {
                return try body(db, since)
            } catch {
                if !db.isBroken, db.transactionStatus != PQTRANS_IDLE { try? db.execute("ROLLBACK") }
                throw error
            }
        }
    }
}
