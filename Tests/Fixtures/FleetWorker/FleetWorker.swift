// PostgreSQLStore exists where libpq is linked: Linux and macOS.
#if os(Linux) || os(macOS)
import Foundation
import StoreMigrations
import StoreMigrationsPostgreSQL

/// One worker of a fleet of tenant schemas shared through PostgreSQL claims, as the fleet tests
/// start it, four at once, and kill it.
///
/// ```
/// FleetWorker <connection-string> --app-version N --worker NAME [--sleep-ms MS] [--fail TENANT]
///     [--tenants N] [--connections N]
/// ```
///
/// The fleet is the schemas `tenant_%`, each with a table `item(id, n)` and a table
/// `step_log(version)`. Manager `app` has migrations `1` to `N`: each sleeps up to `MS` ms in
/// its transaction (so that kills land mid-step), adds 1 to every row's `n` (a counter that a
/// step run twice would show) and logs its version. Migration `N` of tenant `TENANT` throws.
/// The worker prints its report, then `failed <tenant>` for each failed tenant. Exit status: 0
/// when every failure was `TENANT`'s, 1 otherwise, 2 when the run could not start, 64 for bad
/// arguments.
@main
struct FleetWorker {
    static func main() {
        var arguments = Array(CommandLine.arguments.dropFirst())
        guard !arguments.isEmpty else { usage() }
        let connectionString = arguments.removeFirst()
        var appVersion = 1
        var worker = "worker-\(getpid())"
        var sleepMilliseconds = 0
        var failing: String?
        var tenantsInFlight = 3
        var connections = 3
        while arguments.count >= 2 {
            let option = arguments.removeFirst(), value = arguments.removeFirst()
            switch (option, Int(value)) {
            case ("--app-version", let version?): appVersion = version
            case ("--worker", _): worker = value
            case ("--sleep-ms", let milliseconds?): sleepMilliseconds = milliseconds
            case ("--fail", _): failing = value
            case ("--tenants", let count?): tenantsInFlight = count
            case ("--connections", let count?): connections = count
            default: usage()
            }
        }
        guard arguments.isEmpty, appVersion >= 1 else { usage() }
        let report: FleetReport
        do {
            let fleet = try fleet(
                connectionString, appVersion: appVersion, worker: worker, sleepMilliseconds: sleepMilliseconds, failing: failing,
                connections: connections)
            report = try fleet.migrate(FleetRunOptions(maxTenantsInFlight: tenantsInFlight))
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            exit(2)
        }
        print(report)
        for failure in report.failures { print("failed \(failure.tenant.key)") }
        exit(report.failures.allSatisfy { $0.tenant.key == failing } && report.stop == nil ? 0 : 1)
    }

    /// The fleet the tests run, in this process or in workers.
    static func fleet(
        _ connectionString: String, appVersion: Int, worker: String, sleepMilliseconds: Int, failing: String?, connections: Int
    ) throws -> MigrationFleet {
        let tenants = try PostgreSQLTenantSchemas(connectionString, matching: "tenant\\_%", connections: connections)
        let claims = try PostgreSQLFleetClaims(connectionString, fleet: "test", worker: worker)
        return MigrationFleet(appVersion: Version(appVersion), tenants: tenants, claims: claims) { tenant, coordinator in
            let app = try coordinator.manager("app", store: tenants.store(for: tenant, lockTimeout: .seconds(300), lockRetries: .off))
            for version in 1...appVersion {
                app.register(Version(version)) { db in
                    if sleepMilliseconds > 0 { usleep(UInt32.random(in: 0...UInt32(sleepMilliseconds * 1_000))) }
                    try db.execute("UPDATE item SET n = n + 1")
                    _ = try db.execute("INSERT INTO step_log(version) VALUES ($1)", arguments: [.integer(Int64(version))])
                    if tenant.key == failing, version == appVersion {
                        throw WorkerFailure(tenant: tenant.key, version: version)
                    }
                }
            }
        }
    }

    private static func usage() -> Never {
        FileHandle.standardError.write(Data("""
            usage: FleetWorker <connection-string> --app-version N --worker NAME [--sleep-ms MS] [--fail TENANT]
                       [--tenants N] [--connections N]

            """.utf8))
        exit(64)
    }
}

/// The failure of the tenant told to fail.
struct WorkerFailure: Error, CustomStringConvertible {
    let tenant: String
    let version: Int
    var description: String { "tenant \(tenant): app@\(version) failed on purpose (the test's failing tenant); fix its body and run again" }
}
#else
@main
struct FleetWorker {
    static func main() {}
}
#endif
