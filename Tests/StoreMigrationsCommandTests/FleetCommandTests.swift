import Foundation
import Testing
import StoreMigrations
@testable import StoreMigrationsCommand
import TestSupport

/// A fleet of in-memory tenants for the fleet command: each tenant's one manager, `orders`, has
/// 2.0, 2.1 and the post-deploy 2.1-1, and keeps the names of the migrations that ran in its
/// store, kept across the coordinators the fleet makes. A tenant in `failing` throws in 2.1; one
/// in `unplannable` throws in its template.
final class CommandFleet: Sendable {
    let keys: [String]
    let stores: [String: InMemoryStore<[String]>]
    let failing: Locked<Set<String>>
    let unplannable: Locked<Set<String>>
    let groups: [String: String]

    init(_ keys: [String], failing: Set<String> = [], unplannable: Set<String> = [], groups: [String: String] = [:]) {
        self.keys = keys
        stores = Dictionary(uniqueKeysWithValues: keys.map { ($0, InMemoryStore<[String]>([], name: "store \($0)")) })
        self.failing = Locked(failing)
        self.unplannable = Locked(unplannable)
        self.groups = groups
    }

    func fleet(tenants: (any TenantSource)? = nil) -> MigrationFleet {
        let source = tenants ?? TenantList(keys.map { Tenant($0, group: groups[$0]) })
        return MigrationFleet(appVersion: "2.1", tenants: source) { [self] tenant, coordinator in
            try register(tenant, on: coordinator)
        }
    }

    /// The fleet's template: registers `tenant`'s manager on `coordinator`.
    func register(_ tenant: Tenant, on coordinator: MigrationCoordinator) throws {
        if unplannable.value.contains(tenant.key) { throw TestFailure(message: "no store for \(tenant.key)") }
        let orders = try coordinator.manager("orders", store: stores[tenant.key]!)
        for version: Version in ["2.0", "2.1"] {
            orders.register(version) { [failing] applied in
                if version == "2.1", failing.value.contains(tenant.key) { throw TestFailure(message: "boom in \(tenant.key)") }
                applied.append("orders@\(version)")
            }
        }
        orders.register("2.1-1", options: .postDeploy) { applied in applied.append("orders@2.1-1") }
    }

    /// `arguments` run by the migrate command of `key`'s coordinator, made as the fleet makes it.
    func runMigrationCommand(_ arguments: String, tenant key: String) throws -> MigrationCommand.ExitCode {
        let coordinator = MigrationCoordinator(appVersion: "2.1")
        try register(Tenant(key), on: coordinator)
        return MigrationCommand(coordinator: coordinator, commandName: "app migrations").run(
            arguments: arguments.split(separator: " ").map(String.init), console: RecordingConsole().console(isTerminal: false))
    }

    func run(
        _ arguments: String, tenants: (any TenantSource)? = nil, terminal: Bool = false, answers: [String] = []
    ) -> (FleetCommand.ExitCode, String, String) {
        let recorder = RecordingConsole(answers: answers)
        let command = FleetCommand(fleet: fleet(tenants: tenants), commandName: "app fleet")
        let code = command.run(
            arguments: arguments.split(separator: " ").map(String.init), console: recorder.console(isTerminal: terminal))
        return (code, recorder.output, recorder.errors)
    }

    func contents(_ key: String) -> [String] { stores[key]!.contents }
}

/// A list of tenants that keeps a cap on connections (8 of its own), recording each cap it is given.
struct CappedTenants: ConnectionCappedTenantSource {
    let keys: [String]
    let caps = Locked<[Int]>([])

    var description: String { "the capped tenants" }

    func makeTenantIterator() throws -> TenantList.Iterator { TenantList(keys: keys).makeTenantIterator() }

    func capConnections(perDatabase cap: Int) -> Int? {
        let replaced = caps.value.last ?? 8
        caps.value.append(cap)
        return replaced
    }
}

/// Claims whose status says five tenants were migrated, by no worker named.
struct FixedClaims: FleetClaims {
    var description: String { "fixed claims" }
    func claim(_ tenant: Tenant, appVersion: Version) throws -> FleetClaim { .claimed }
    func release(_ tenant: Tenant, appVersion: Version, result: FleetClaimResult) throws {}
    func status(appVersion: Version) throws -> FleetStatus {
        FleetStatus(appVersion: appVersion, migrated: 5, failed: 0, running: 0, interrupted: 0, workers: [], entries: [])
    }
}

/// A source that cannot be listed.
struct UnreadableSource: TenantSource {
    var description: String { "the missing tenants table" }
    func makeTenantIterator() throws -> TenantList.Iterator { throw TestFailure(message: "no such table: tenants") }
}

/// The fleet command's subcommands, their output and exit codes, on in-memory tenant fleets:
/// status (and `--check`), plan (text and JSON), migrate (progress, failures, the failure budget,
/// canary waves, reruns, confirmation, dry run), help, and bad arguments, which run and change
/// nothing.
@Suite struct FleetCommandTests {
    @Test func statusCountsTheTenantsAndCheckExitsThreeWhileTenantsWait() throws {
        let fleet = CommandFleet(["a", "b", "c"])
        let (code, output, errors) = fleet.run("status --check")
        #expect(code == .pending && errors.isEmpty)
        #expect(output == """
            Tenants of a list of 3 tenants, to app version 2.1: 3
              up to date:  0
              to migrate:  3
              held:        3 (post-deploy steps)
              in progress: 0
              failed:      0
            Levels:
              orders none: 3 tenants (a, b, c)
            'app fleet migrate' migrates 3 tenants; 'app fleet migrate --post-deploy' runs the post-deploy steps of 3 tenants once the previous version is gone.

            """)
        #expect(fleet.run("status").0 == .success, "without --check, status exits 0 whatever waits")

        #expect(fleet.run("migrate").0 == .success)
        let (held, heldOutput, _) = fleet.run("status --check")
        #expect(held == .success, "only post-deploy steps wait: ready for the rollout, as 'migrate status --check' says")
        #expect(fleet.run("status --check --post-deploy").0 == .pending, "the post-deploy steps still wait")
        #expect(heldOutput.contains("  up to date:  3\n  to migrate:  0\n  held:        3 (post-deploy steps)\n"))
        #expect(heldOutput.hasSuffix("Levels:\n  orders 2.1: 3 tenants (a, b, c)\nReady for start-ups: 'app fleet migrate --post-deploy' "
            + "runs the post-deploy steps of 3 tenants once the previous version is gone.\n"))

        #expect(fleet.run("migrate --post-deploy").0 == .success)
        let (done, doneOutput, _) = fleet.run("status --check --post-deploy")
        #expect(done == .success)
        #expect(doneOutput.hasSuffix("  failed:      0\nLevels:\n  orders 2.1-1: 3 tenants (a, b, c)\nUp to date.\n"))
        for key in fleet.keys { #expect(fleet.contents(key) == ["orders@2.0", "orders@2.1", "orders@2.1-1"]) }
    }

    /// At each stage of a release (nothing run, start-up steps run, post-deploy steps run), the
    /// fleet's `status --check` exits as the migrate command's does on a tenant's coordinator,
    /// with and without `--post-deploy`.
    @Test func fleetStatusCheckExitsAsMigrateStatusCheckDoes() throws {
        let fleet = CommandFleet(["a"])
        var codes: [MigrationCommand.ExitCode] = []
        for stage in ["", "migrate", "migrate --post-deploy"] {
            if !stage.isEmpty { #expect(fleet.run(stage).0 == .success) }
            for check in ["status --check", "status --check --post-deploy"] {
                let fleetCode = fleet.run(check).0
                #expect(fleetCode == (try fleet.runMigrationCommand(check, tenant: "a")), "\(check) after '\(stage)'")
                codes.append(fleetCode)
            }
        }
        #expect(codes == [.pending, .pending, .success, .pending, .success, .success])
    }

    @Test func statusOfAFleetSharedByWorkersSaysWhoDidWhat() throws {
        let fleet = CommandFleet(["a", "b"])
        let claims = FixedClaims()
        let shared = MigrationFleet(appVersion: "2.1", tenants: TenantList(keys: fleet.keys), claims: claims) { tenant, coordinator in
            try fleet.register(tenant, on: coordinator)
        }
        let recorder = RecordingConsole()
        let code = FleetCommand(fleet: shared, commandName: "app fleet").run(
            arguments: ["status"], console: recorder.console(isTerminal: false))
        #expect(code == .success)
        #expect(recorder.output.hasSuffix("""
            'app fleet migrate' migrates 2 tenants; 'app fleet migrate --post-deploy' runs the post-deploy steps of 2 tenants once the previous version is gone.
            Fleet status to app version 2.1: 5 migrated, 0 failed, 0 running.

            """))
        #expect(fleet.run("status").1.contains("Fleet status") == false, "a fleet without claims has no one to name")
    }

    @Test func statusCheckExitsOneAndNamesATenantThatCannotBePlanned() {
        let fleet = CommandFleet(["a", "b", "c"], unplannable: ["b"])
        let (code, output, errors) = fleet.run("status --check")
        #expect(code == .failure)
        #expect(output.contains("  failed:      1\n    b: boom") == false)
        #expect(output.contains("  failed:      1\n    b: no store for b\n"))
        #expect(output.hasSuffix("1 tenant failed: see why above.\n"))
        #expect(errors == "app fleet: error: 1 tenant could not be planned or would be refused; fix the cause shown for each, then check again.\n")
    }

    @Test func statusNamesTheTenantsPartWayThroughAResumableMigration() throws {
        let keys = ["a", "b", "c", "d", "e", "f", "g"]
        let stores = Dictionary(uniqueKeysWithValues: keys.map { ($0, InMemoryStore<[String]>([], name: "store \($0)")) })
        let template: MigrationFleet.Template = { tenant, coordinator in
            // 40 rows in batches of 10.
            try coordinator.manager("big", store: stores[tenant.key]!).registerResumable("1.0", batchSize: .fixed(10)) { rows, batch in
                let done = Int(batch.cursor ?? "0")! + batch.limit
                rows.append("batch to \(done)")
                return done >= 40 ? .finished(processed: batch.limit) : .more(cursor: String(done), processed: batch.limit, total: 40)
            }
        }
        // Six tenants' launches stopped by their budget after one batch.
        for key in keys.dropLast() {
            let coordinator = MigrationCoordinator(appVersion: "1.0")
            coordinator.deferredWork = .manual
            try template(Tenant(key), coordinator)
            _ = try coordinator.run(launchBudget: .zero)
        }
        let recorder = RecordingConsole()
        let command = FleetCommand(fleet: MigrationFleet(appVersion: "1.0", tenants: TenantList(keys: keys), template: template), commandName: "app fleet")
        #expect(command.run(arguments: ["status", "--check"], console: recorder.console(isTerminal: false)) == .pending)
        #expect(recorder.output.contains("  to migrate:  7\n  held:        0\n  in progress: 6\n    a: big 1.0: 25% (10 of 40) in 1 batch, resumes after 10"))
        #expect(recorder.output.contains("\n    e: big 1.0: 25% (10 of 40) in 1 batch, resumes after 10"))
        #expect(recorder.output.contains("\n    and 1 more\n  failed:      0\n"), "five tenants named, of six")
    }

    @Test func planGroupsThePendingStepsAsTextAndJSON() throws {
        let fleet = CommandFleet(["a", "b", "c", "d"])
        #expect(fleet.run("migrate --tenants 1 --canary 1 --max-failures 0", tenants: TenantList(keys: ["a", "b"])).0 == .success)

        let (code, text, errors) = fleet.run("plan")
        #expect(code == .success && errors.isEmpty)
        #expect(text.contains("Fleet plan to app version 2.1: 4 tenants, 2 to migrate, 2 up to date.\n"))
        #expect(text.contains("  pending:\n    2 tenants: orders@2.0, orders@2.1 (c, d)\n"))

        let (jsonCode, json, _) = fleet.run("plan --json")
        #expect(jsonCode == .success)
        let decoded = try JSONDecoder().decode(FleetPlan.self, from: Data(json.utf8))
        #expect(decoded == (try fleet.fleet().plan()))
        #expect(decoded.pending.map(\.examples) == [["c", "d"]])

        let (_, postDeploy, _) = fleet.run("plan --post-deploy")
        // As large, the group whose first tenant the source lists first comes first.
        #expect(postDeploy.contains("  pending:\n    2 tenants: orders@2.1-1 (a, b)\n    2 tenants: orders@2.0, orders@2.1, orders@2.1-1 (c, d)\n"))
    }

    @Test func migrateWritesProgressEachFailureAndASummaryNamingTheFailedTenants() throws {
        let fleet = CommandFleet(["a", "b", "c", "d", "e"], failing: ["c"])
        let (code, output, errors) = fleet.run("migrate --tenants 1")
        #expect(code == .failure)
        let lines = output.split(separator: "\n").map(String.init)
        #expect(lines.filter { $0.contains(" of 5 tenants: ") }.map { String($0.prefix { $0 != ";" && $0 != "," }) } == [
            "1 of 5 tenants: 1 migrated", "2 of 5 tenants: 2 migrated", "3 of 5 tenants: 2 migrated",
            "4 of 5 tenants: 3 migrated", "5 of 5 tenants: 4 migrated",
        ])
        let failure = try #require(lines.firstIndex { $0.hasPrefix("c: failed: ") })
        #expect(lines[failure].contains("Migration orders@2.1 on store c failed: boom in c."))
        #expect(lines[failure + 1].hasPrefix("3 of 5 tenants: 2 migrated, 0 up to date, 1 failed"), "the failure comes as it happens")
        #expect(output.contains("Fleet migration to app version 2.1: 5 tenants in "))
        #expect(output.contains(": 4 migrated, 0 up to date, 1 failed, 0 not started.\n  failed c: Migration orders@2.1 on store c failed: boom in c."))
        #expect(errors == "app fleet: error: 1 tenant failed (c); fix the cause and run 'app fleet migrate' again: it takes only the tenants not up to date.\n")
        #expect(fleet.contents("c") == ["orders@2.0"])

        let (waiting, status, _) = fleet.run("status --check")
        #expect(waiting == .pending)
        #expect(status.contains("  up to date:  4\n  to migrate:  1\n"))
        #expect(status.contains("  orders 2.0: 1 tenant (c)\n  orders 2.1: 4 tenants (a, b, d, e)\n"))

        fleet.failing.value = []
        let (rerun, rerunOutput, rerunErrors) = fleet.run("migrate")
        #expect(rerun == .success && rerunErrors.isEmpty)
        #expect(rerunOutput.contains(": 1 migrated, 4 up to date, 0 failed, 0 not started.\n"), "only the tenant left runs")
        #expect(fleet.contents("c") == ["orders@2.0", "orders@2.1"])
    }

    @Test func theFailureBudgetAndTheCanaryWaveStopTheRest() {
        let budget = CommandFleet(["a", "b", "c", "d", "e"], failing: ["b", "c"])
        let (code, output, errors) = budget.run("migrate --tenants 1 --max-failures 1")
        #expect(code == .failure)
        #expect(output.contains(": 1 migrated, 0 up to date, 2 failed, 2 not started.\n"))
        #expect(output.contains("  stopped: the failure budget was spent: the tenants after it were not started.\n"))
        #expect(errors.hasPrefix("app fleet: error: 2 tenants failed (b, c); the failure budget was spent"))
        #expect(budget.contents("d").isEmpty && budget.contents("e").isEmpty)

        let share = CommandFleet(["a", "b", "c", "d", "e"], failing: ["b", "c"])
        // 20% of 5 tenants: one failure accepted, the second stops the run.
        #expect(share.run("migrate --tenants 1 --max-failures 20%").1.contains(": 1 migrated, 0 up to date, 2 failed, 2 not started.\n"))

        let canary = CommandFleet(["a", "b", "c", "d"], failing: ["b"])
        let (canaryCode, canaryOutput, _) = canary.run("migrate --tenants 4 --canary 2")
        #expect(canaryCode == .failure)
        #expect(canaryOutput.contains(": 1 migrated, 0 up to date, 1 failed, 2 not started.\n"))
        #expect(canaryOutput.contains("  stopped: the canary wave failed: the rest of the fleet was not started.\n"))
        #expect(canary.contents("c").isEmpty && canary.contents("d").isEmpty)

        let grouped = CommandFleet(["a", "b", "c", "d"], groups: ["c": "canary"])
        let (groupCode, groupOutput, _) = grouped.run("migrate --tenants 1 --canary-group canary")
        #expect(groupCode == .success)
        #expect(groupOutput.hasPrefix("1 of 4 tenants: 1 migrated"))
        #expect(grouped.keys.allSatisfy { grouped.contents($0) == ["orders@2.0", "orders@2.1"] })
    }

    @Test func migrateAsksOnATerminalAndDryRunRunsNothing() {
        let fleet = CommandFleet(["a", "b"])
        let (declined, question, errors) = fleet.run("migrate", terminal: true, answers: ["n"])
        #expect(declined == .declined)
        #expect(question.hasSuffix("  pending:\n    2 tenants: orders@2.0, orders@2.1 (a, b)\n  held for the deployment (post-deploy):\n    2 tenants: orders@2.1-1 (a, b)\nMigrate 2 tenants? [y/N] "))
        #expect(errors == "app fleet: migration cancelled: nothing was run.\n")

        let (dry, dryOutput, _) = fleet.run("migrate --dry-run")
        #expect(dry == .success && dryOutput.hasSuffix("\nDry run: nothing was run.\n"))
        #expect(fleet.contents("a").isEmpty && fleet.contents("b").isEmpty)

        #expect(fleet.run("migrate", terminal: true, answers: ["y"]).0 == .success)
        #expect(fleet.contents("a") == ["orders@2.0", "orders@2.1"])
        let (nothing, nothingOutput, _) = fleet.run("migrate", terminal: true)
        #expect(nothing == .success && nothingOutput.hasSuffix("\nNothing to migrate.\n"))
        #expect(fleet.run("migrate --yes", terminal: true).0 == .success)
    }

    @Test func anUnreadableSourceExitsOneNamingIt() {
        let fleet = CommandFleet([])
        for subcommand in ["status", "plan", "migrate"] {
            let (code, output, errors) = fleet.run(subcommand, tenants: UnreadableSource())
            #expect(code == .failure && output.isEmpty)
            #expect(errors == "app fleet: error: The tenants of the missing tenants table could not be read: no such table: tenants. "
                + "No tenant was migrated; check that the source is there and readable, then run again.\n")
        }
    }

    @Test func migrateGivesItsCapOnConnectionsToTheSourceForTheRun() throws {
        let fleet = CommandFleet(["a", "b"])
        let source = CappedTenants(keys: ["a", "b"])
        let (code, _, errors) = fleet.run("migrate --tenants 2 --connections 3", tenants: source)
        #expect(code == .success && errors.isEmpty)
        #expect(source.caps.value == [3, 8])
        #expect(fleet.contents("a") == ["orders@2.0", "orders@2.1"] && fleet.contents("b") == ["orders@2.0", "orders@2.1"])
    }

    @Test func helpExitsZeroAndListsTheExitCodes() {
        let fleet = CommandFleet(["a"])
        let (code, output, errors) = fleet.run("--help")
        #expect(code == .success && errors.isEmpty)
        #expect(output.hasPrefix("USAGE: app fleet <subcommand> [options]\n\nMigrates the tenants of a list of 1 tenant to app version 2.1.\n"))
        #expect(output.contains("  3  status --check: tenants have steps a start-up would run (with --post-deploy:\n"))
        for subcommand in FleetCommandSession.Subcommand.allCases {
            let (subcode, suboutput, _) = fleet.run("\(subcommand.rawValue) --help")
            #expect(subcode == .success && suboutput.hasPrefix("USAGE: app fleet \(subcommand.synopsis)\n"))
        }
        #expect(fleet.contents("a").isEmpty)
    }

    @Test(arguments: [
        ("", "no subcommand given; name one of status, plan, migrate", "app fleet --help"),
        ("upgrade", "unknown subcommand 'upgrade'; name one of status, plan, migrate", "app fleet --help"),
        ("migrate --tenants 0", "'migrate --tenants' takes a whole number of at least 1, not '0'; give one such as --tenants 8", "app fleet migrate --help"),
        ("migrate --tenants many", "'migrate --tenants' takes a whole number of at least 1, not 'many'; give one such as --tenants 8", "app fleet migrate --help"),
        ("migrate --canary 0", "'migrate --canary' takes a whole number of at least 1, not '0'; give one such as --canary 20", "app fleet migrate --help"),
        ("migrate --canary 2 --canary-group eu", "'migrate' takes --canary or --canary-group, not both; choose one", "app fleet migrate --help"),
        ("migrate --max-failures 120%", "'migrate --max-failures' takes a whole number of at least 0 or a share from 0% to 100%, not '120%'; give one such as --max-failures 3 or --max-failures 5%", "app fleet migrate --help"),
        ("migrate --max-failures", "'migrate --max-failures' needs a value", "app fleet migrate --help"),
        ("migrate --connections 0", "'migrate --connections' takes a whole number of at least 1, not '0'; give one such as --connections 4", "app fleet migrate --help"),
        ("migrate --connections 4", "'migrate --connections' cannot be kept: the stores of a list of 2 tenants share no connections; "
            + "leave it out and bound the connections with --tenants", "app fleet migrate --help"),
        ("migrate now", "'migrate' takes no argument 'now'; see its usage with 'migrate --help'", "app fleet migrate --help"),
        ("plan --dot", "'plan' has no option '--dot'; see its options with 'plan --help'", "app fleet plan --help"),
        ("status --check=yes", "'status' has no option '--check=yes'; see its options with 'status --help'", "app fleet status --help"),
    ])
    func badArgumentsExitTwoAndChangeNothing(arguments: String, message: String, help: String) {
        let fleet = CommandFleet(["a", "b"])
        let (code, output, errors) = fleet.run(arguments)
        #expect(code == .usage)
        #expect(output.isEmpty)
        #expect(errors.hasPrefix("app fleet: error: \(message)"))
        #expect(errors.hasSuffix("Run '\(help)' for usage.\n"))
        #expect(fleet.contents("a").isEmpty && fleet.contents("b").isEmpty)
    }
}
