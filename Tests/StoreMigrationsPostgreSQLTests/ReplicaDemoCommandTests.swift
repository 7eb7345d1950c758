import Foundation
import Testing
import TestSupport

/// The replica demo's migration command (`replica-demo --database URL …`) as a release job runs
/// it, a process of its own on a database of the test server: `status --check` exits 3 while
/// anything is pending, `migrate` leaves the post-deploy migration (the `customer` column stays
/// for 1.x replicas) until `migrate --post-deploy` drops it; bad arguments exit 2 and change
/// nothing.
@Suite struct ReplicaDemoCommandTests {
    @Test func aReleaseJobMigratesThenRunsThePostDeployMigration() throws {
        let database = try PostgreSQLTestDatabase()
        let folder = try TemporaryFolder()
        let demo = try builtExecutable(named: "replica-demo", override: "REPLICA_DEMO")
        func command(_ arguments: String) throws -> ChildProcess.Exit {
            let child = try ChildProcess(
                executable: demo, arguments: ["--database", database.connectionString] + arguments.split(separator: " ").map(String.init),
                logs: folder.url)
            return try #require(child.wait(timeout: eventWaitBound), "replica-demo \(arguments) ended")
        }

        let bad = try command("migrate --bogus")
        #expect(bad.status == 2, "\(bad)")
        #expect(bad.standardOutput.isEmpty)
        #expect(bad.standardError.hasPrefix("replica-demo --database …: error: 'migrate' has no option '--bogus'"))

        let fresh = try command("status --check")
        #expect(fresh.status == 3, "\(fresh)")
        #expect(fresh.standardOutput.contains("  pending:     1.0, 1.1, 1.2, 2.0\n"))
        #expect(fresh.standardOutput.contains("  post-deploy: 2.0-1\n"))
        #expect(fresh.standardError.isEmpty)

        let dryRun = try command("migrate --dry-run")
        #expect(dryRun.status == 0 && dryRun.standardOutput.hasSuffix("Dry run: nothing was run.\n"), "\(dryRun)")
        #expect(try database.tables().filter { $0 == "orders" }.isEmpty)

        // Standard input is not a terminal: no question.
        let migrate = try command("migrate")
        #expect(migrate.status == 0, "\(migrate)")
        #expect(migrate.standardOutput.contains("  orders@2.0: applied"))
        #expect(migrate.standardOutput.contains("1 post-deploy step wait (orders@2.0-1)"))
        #expect(try database.columns(of: "orders").contains("customer"))
        #expect(try database.record(of: "orders").level == "2.0")

        // Ready for the rollout; the release job's own check still sees the post-deploy step.
        let waiting = try command("status --check")
        #expect(waiting.status == 0, "\(waiting)")
        #expect(waiting.standardOutput.hasSuffix("Ready for start-ups: nothing pending; 1 post-deploy step waits "
            + "('replica-demo --database … migrate --post-deploy' once the previous version is gone).\n"), "\(waiting)")
        #expect(try command("status --check --post-deploy").status == 3)

        let postDeploy = try command("migrate --post-deploy")
        #expect(postDeploy.status == 0, "\(postDeploy)")
        #expect(postDeploy.standardOutput.contains("  orders@2.0-1: applied"))
        #expect(try !database.columns(of: "orders").contains("customer"))
        #expect(try database.columns(of: "orders").contains("customer_key"))
        #expect(try database.record(of: "orders").level == "2.0-1")

        let done = try command("status --check")
        #expect(done.status == 0 && done.standardOutput.hasSuffix("Up to date.\n"), "\(done)")
    }
}
