#if canImport(CLibPQ)
import Foundation
import StoreMigrations
import StoreMigrationsPostgreSQL
import ThrowawayPostgreSQL

/// A fleet of PostgreSQL tenant schemas (`fleet-postgresql`): a release of two migrations (a
/// data change on each tenant's 100 rows, then a DDL change) applied to every schema, and the
/// fleet's up-to-date check, beside django-tenants' `migrate_schemas` (standard and
/// multiprocessing executors) on the same release, run in the same run as a child process
/// through the peer harness (`FLEET_PEER`: its `django-tenants/run.sh`; by default the shared
/// copy, `/work/shared/peers/fleet`, whose `migrations_release1` symlinks must be links, not
/// files holding their targets' paths, as a plain copy of that folder left them here).
///
/// Both servers run with `fsync=off` (the peer harness's setting: durability is not measured).
/// The figures are seconds per tenant: ours for `tenants` schemas, the peer's for `peerTenants`
/// (its per-tenant cost grows with the fleet, so a smaller peer fleet favours it).
struct FleetPostgreSQLWorkload {
    let tenants: Int
    let peerTenants: Int
    let tenantsInFlight: Int
    let connections: Int
    let timer: Timer

    func run() throws -> [Measurement] {
        let server = try ThrowawayPostgreSQLServer(
            .init(folderPrefix: "sm-bench-fleet", settings: ["fsync=off", "max_connections=200", "autovacuum=off"]))
        defer { server.stop() }
        let connection = server.connectionString(database: "postgres")
        try makeSchemas(connection)
        let release1 = try fleet(connection, release: 1)
        let setup = try release1.migrate(FleetRunOptions(maxTenantsInFlight: tenantsInFlight))
        precondition(setup.migrated == tenants && setup.succeeded, "\(setup)")

        // The up-to-date check, a fresh source (pool, read-ahead) each time as a new process has,
        // taking turns with raw libpq reading the same records on a new session.
        let checks = try timer.compare(
            library: {
                let plan = try fleet(connection, release: 1).plan(maxTenantsInFlight: tenantsInFlight)
                precondition(plan.isUpToDate && plan.tenants == tenants, "\(plan)")
            },
            baseline: { try readByHand(connection) })
        let check = checks.library.median
        // Where the check's time goes: the source's walk alone (pages and their records read ahead).
        let walk = try timer.median {
            var iterator = try PostgreSQLTenantSchemas(connection, matching: "t%", connections: connections).makeTenantIterator()
            var count = 0
            while try iterator.next() != nil { count += 1 }
            precondition(count == tenants)
        }
        let start = ContinuousClock.now
        let report = try fleet(connection, release: 2).migrate(FleetRunOptions(maxTenantsInFlight: tenantsInFlight))
        let elapsed = (ContinuousClock.now - start).seconds
        precondition(report.migrated == tenants && report.succeeded, "\(report)")
        try verify(connection)

        let peer = try PeerRun(tenants: peerTenants)
        let best = peer.applySeconds.min { $0.value < $1.value }
        let bestCheck = peer.noopSeconds.min { $0.value < $1.value }
        let note = peer.summary + " Ours: \(tenants) schemas, \(tenantsInFlight) tenants in flight, \(connections) connections: "
            + String(format: "%.1f tenants/s, check %.3f s.", Double(tenants) / elapsed, check)
        return [
            Measurement(
                workload: "Fleet: 2 new migrations on \(tenants) tenant schemas of 100 rows (peer: \(peerTenants))",
                metric: "seconds per tenant: fleet.migrate() vs django-tenants' best executor (\(best?.key ?? "not run"))",
                runs: 1, libraryMedian: elapsed / Double(tenants), baselineMedian: best.map { $0.value / Double(peerTenants) },
                target: "≤ 0.1 (10x the peer's throughput)", note: note),
            Measurement(
                workload: "Fleet: up-to-date check of \(tenants) tenant schemas",
                metric: "seconds: fleet.plan().isUpToDate vs raw libpq reading every schema's records, 500 schemas a query, on a new session",
                runs: timer.runs, libraryMedian: check, baselineMedian: checks.baseline.median, target: "≤ 0.5 s"),
            Measurement(
                workload: "Fleet: up-to-date check of \(tenants) tenant schemas (peer: \(peerTenants))",
                metric: "seconds per tenant: fleet.plan().isUpToDate vs migrate_schemas with nothing to do (\(bestCheck?.key ?? "not run"))",
                runs: timer.runs, libraryMedian: check / Double(tenants),
                baselineMedian: bestCheck.map { $0.value / Double(peerTenants) },
                target: "≤ 0.5 s for 1,000 schemas",
                note: String(format: "%.3f s for %d schemas, of which the source's walk (pages and records read ahead) %.3f s", check, tenants, walk)),
        ]
    }

    private static func schema(_ index: Int) -> String { String(format: "t%05d", index) }

    private func makeSchemas(_ connection: String) throws {
        let db = try RawLibPQ(connection)
        for start in stride(from: 0, to: tenants, by: 100) {
            try db.execute((start..<min(tenants, start + 100)).map { "CREATE SCHEMA \(Self.schema($0))" }.joined(separator: "; "))
        }
    }

    /// The fleet at release 1 (table, column, index; 100 rows seeded) or release 2 (adds the
    /// data change and the NOT NULL column), the migrations django-tenants' `crm` app has.
    private func fleet(_ connection: String, release: Int) throws -> MigrationFleet {
        let source = try PostgreSQLTenantSchemas(connection, matching: "t%", connections: connections)
        return MigrationFleet(appVersion: release == 1 ? "3" : "5", tenants: source) { tenant, coordinator in
            let crm = try coordinator.manager("crm", store: source.store(for: tenant))
            crm.register("1") { db in
                try db.execute("""
                    CREATE TABLE crm_customer(id serial PRIMARY KEY, name text NOT NULL, email text NOT NULL);
                    INSERT INTO crm_customer(name, email) SELECT 'Customer ' || i, 'User' || i || '@Example.COM' FROM generate_series(1, 100) i
                    """)
            }
            crm.register("2") { db in try db.execute("ALTER TABLE crm_customer ADD COLUMN plan text") }
            crm.register("3") { db in try db.execute("CREATE INDEX crm_customer_email ON crm_customer(email)") }
            crm.register("4") { db in
                _ = try db.execute("UPDATE crm_customer SET plan = CASE WHEN id % 3 = 0 THEN 'pro' ELSE 'free' END, email = lower(email)",
                                   arguments: [])
            }
            crm.register("5") { db in try db.execute("ALTER TABLE crm_customer ADD COLUMN is_active boolean NOT NULL DEFAULT true") }
        }
    }

    /// The baseline of the check: the least a client can ask of the server, on a session of
    /// its own as a new process has: the schemas listed, then both record tables of 500 schemas
    /// in one query (a statement each, no `ORDER BY`), each schema's applied versions compared
    /// with the release's.
    private func readByHand(_ connection: String) throws {
        let db = try RawLibPQ(connection)
        let schemas = try db.rows("SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 't%' ORDER BY 1").compactMap { $0[0] }
        var upToDate = 0
        for start in stride(from: 0, to: schemas.count, by: 500) {
            let page = schemas[start..<min(schemas.count, start + 500)]
            let sql = page.map { schema in
                "SELECT manager, level, app_version, baseline, progress FROM \(schema).store_migrations_levels; "
                    + "SELECT manager, version, applied_at, duration_seconds, name, fingerprint, id FROM \(schema).store_migrations_history"
            }.joined(separator: "; ")
            let results = try db.rowsOfEach(sql)
            for index in page.indices {
                let history = results[2 * (index - start) + 1]
                if Set(history.compactMap { $0[1] }) == ["1", "2", "3"] { upToDate += 1 }
            }
        }
        precondition(upToDate == tenants, "\(upToDate) of \(tenants) up to date by hand")
    }

    private func verify(_ connection: String) throws {
        let db = try RawLibPQ(connection)
        for index in [0, tenants / 2, tenants - 1] {
            let rows = try db.rows("SELECT count(*) FROM \(Self.schema(index)).crm_customer WHERE plan IS NOT NULL AND is_active").first?.first ?? nil
            precondition(rows == "100", "tenant \(Self.schema(index)): \(rows ?? "nil") rows migrated")
        }
    }
}

/// django-tenants' run over the peer harness, as a child process: its `apply2` and `noop` lines.
struct PeerRun {
    var applySeconds: [String: Double] = [:]
    var noopSeconds: [String: Double] = [:]
    var summary = "The peer was not run (no harness at FLEET_PEER or /work/shared/peers/fleet)."

    /// No peer run when `tenants` is 0 (`--quick`, as CI runs the benchmarks: the peer's install
    /// and its own server are not what CI checks).
    init(tenants: Int) throws {
        guard tenants > 0 else {
            summary = "The peer was not run (--quick)."
            return
        }
        let script = ProcessInfo.processInfo.environment["FLEET_PEER"] ?? "/work/shared/peers/fleet/django-tenants/run.sh"
        guard FileManager.default.isExecutableFile(atPath: script) else { return }
        var environment = ProcessInfo.processInfo.environment
        environment["KILLS"] = ""
        environment["EXECUTORS"] = environment["EXECUTORS"] ?? "standard mp2 mp4"
        let outputURL = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-peer-\(UUID().uuidString).jsonl")
        defer { try? FileManager.default.removeItem(at: outputURL) }
        let ending = try ChildProcess.run(program: "/bin/bash", arguments: [script, String(tenants), "1"],
                                          environment: environment, standardOutput: outputURL.path)
        let data = try Data(contentsOf: outputURL)
        var lines: [String] = []
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let workload = object["workload"] as? String, let seconds = object["seconds"] as? Double
            else { continue }
            let procs = object["processes_setting"] as? Int ?? 0
            let executor = procs == 0 ? "standard" : "multiprocessing \(procs)"
            switch workload {
            case "apply2":
                applySeconds[executor] = seconds
                lines.append(String(format: "%@ %.1f s (%.1f tenants/s)", executor, seconds, Double(tenants) / seconds))
            case "noop":
                noopSeconds[executor] = seconds
                lines.append(String(format: "%@ up to date %.1f s", executor, seconds))
            default:
                continue
            }
        }
        summary = "django-tenants at \(tenants) schemas (\(ending)): " + lines.joined(separator: "; ") + "."
    }
}

extension Duration {
    fileprivate var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
#endif
