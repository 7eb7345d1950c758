import Foundation
import Testing
import StoreMigrations
@testable import StoreMigrationsCommand
import TestSupport

/// What a command writes, and the answers it reads, in a test.
final class RecordingConsole: @unchecked Sendable {
    // @unchecked: every property is only touched with `lock` held.
    private let lock = NSLock()
    private var out = ""
    private var err = ""
    private var answers: [String]

    init(answers: [String] = []) { self.answers = answers }

    var output: String { lock.withLock { out } }
    var errors: String { lock.withLock { err } }
    var unreadAnswers: Int { lock.withLock { answers.count } }

    func console(isTerminal: Bool) -> CommandConsole {
        CommandConsole(
            output: { text in self.lock.withLock { self.out += text } },
            errors: { text in self.lock.withLock { self.err += text } },
            isTerminal: isTerminal,
            readLine: { self.lock.withLock { self.answers.isEmpty ? nil : self.answers.removeFirst() } })
    }
}

/// Each subcommand's output and exit code, run in-process on in-memory stores: status (and
/// `--check`), plan (text, JSON, DOT), migrate (targets, post-deploy, dry run, confirmation),
/// baseline, help, and bad arguments, which run and change nothing.
@Suite struct MigrationCommandTests {
    let coordinator = MigrationCoordinator(appVersion: "2.0")
    let log = EventLog()
    let orders: MigrationManager<InMemoryStore<[String]>>
    let prefs: MigrationManager<InMemoryStore<[String]>>
    let command: MigrationCommand

    /// orders: 1.0, 2.0, 2.0-1 (post-deploy), 3.0 (ahead); prefs: 1.0, 2.0 after orders@2.0.
    init() throws {
        coordinator.maxConcurrentStores = 1
        orders = try coordinator.manager("orders", store: InMemoryStore<[String]>([], name: "orders db"))
        prefs = try coordinator.manager("prefs", store: InMemoryStore<[String]>([], name: "prefs file"))
        registerLogging(["1.0", "2.0", "3.0"], on: orders, log: log)
        let log = log
        orders.register("2.0-1", options: .postDeploy) { applied in
            applied.append("orders@2.0-1")
            log.append("orders@2.0-1")
        }
        registerLogging(["1.0", "2.0"], on: prefs, log: log, dependsOn: ["2.0": [orders.migration("2.0")]])
        command = MigrationCommand(coordinator: coordinator, commandName: "app migrations")
    }

    func run(_ arguments: String, terminal: Bool = false, answers: [String] = []) -> (MigrationCommand.ExitCode, String, String) {
        let recorder = RecordingConsole(answers: answers)
        let code = command.run(arguments: arguments.split(separator: " ").map(String.init), console: recorder.console(isTerminal: terminal))
        return (code, recorder.output, recorder.errors)
    }

    @Test func statusShowsEachManagerAndCheckExitsThreeWhilePending() throws {
        let (code, output, errors) = run("status")
        #expect(code == .success && errors.isEmpty)
        #expect(output == """
            Migrations to app version 2.0:
            orders (orders db): level none, first launch (runAll)
              applied:     none
              pending:     1.0, 2.0
              late:        none
              ahead:       3.0
              in progress: none
              post-deploy: 2.0-1
            prefs (prefs file): level none, first launch (runAll)
              applied:     none
              pending:     1.0, 2.0
              late:        none
              ahead:       none
              in progress: none
              post-deploy: none
            Pending: 4 steps; and 1 post-deploy step waits ('app migrations migrate --post-deploy' once the previous version is gone).

            """)
        #expect(run("status --check").0 == .pending)
        #expect(run("status --check --post-deploy").0 == .pending)

        // Ready for the rollout while only the post-deploy migration waits; the release job
        // that runs it is not done.
        _ = try coordinator.run()
        let (afterStartUp, text, _) = run("status --check")
        #expect(afterStartUp == .success, "only the post-deploy migration waits")
        #expect(text.contains("  applied:     1.0, 2.0\n  pending:     none\n"))
        #expect(text.hasSuffix("\nReady for start-ups: nothing pending; 1 post-deploy step waits "
            + "('app migrations migrate --post-deploy' once the previous version is gone).\n"), "\(text)")
        #expect(!text.contains("Pending:"))
        #expect(run("status --check --post-deploy").0 == .pending)

        _ = try coordinator.run(postDeploy: true)
        #expect(run("status --check --post-deploy").0 == .success)
        let (done, doneText, _) = run("status --check")
        #expect(done == .success)
        #expect(doneText.hasSuffix("  post-deploy: none\nUp to date.\n"))
        #expect(doneText.contains("  applied:     1.0, 2.0, 2.0-1\n"))
    }

    @Test func statusShowsBaselinesLateAndInProgressMigrations() throws {
        try orders.baseline(at: "1.0")
        let (_, baselined, _) = run("status")
        #expect(baselined.contains("orders (orders db): level 1.0\n  applied:     none (baseline 1.0)\n  pending:     2.0\n"))

        // A resumable migration a launch budget stopped after one batch of 10 out of 40.
        coordinator.deferredWork = .manual
        let big = try coordinator.manager("big", store: InMemoryStore<[String]>([], name: "big store"))
        big.registerResumable("1.0", batchSize: .fixed(10)) { rows, batch in
            let done = Int(batch.cursor ?? "0")! + batch.limit
            rows.append("batch to \(done)")
            return done >= 40 ? .finished(processed: batch.limit) : .more(cursor: String(done), processed: batch.limit, total: 40)
        }
        _ = try coordinator.run(launchBudget: .zero)
        orders.register("1.5") { _ in }
        let (code, output, _) = run("status --check")
        #expect(code == .pending)
        #expect(output.contains("  late:        1.5 (run)\n"))
        #expect(output.contains("big (big store): level none, first launch (runAll)\n  applied:     none\n  pending:     1.0\n"))
        #expect(output.contains("  in progress: 1.0: 25% (10 of 40) in 1 batch, resumes after 10"))
    }

    @Test func planPrintsTextJSONAndDOT() throws {
        let (code, text, _) = run("plan")
        #expect(code == .success)
        let expectedText = try coordinator.plan().description
        #expect(text == expectedText + "\n")
        #expect(text.contains("after the deployment (post-deploy): orders@2.0-1 after orders@2.0"))

        let (jsonCode, json, _) = run("plan --json")
        #expect(jsonCode == .success)
        #expect(try JSONDecoder().decode(MigrationPlan.self, from: Data(json.utf8)) == coordinator.plan())

        let (dotCode, dot, _) = run("plan --dot")
        let expectedDOT = try coordinator.plan().graphviz()
        #expect(dotCode == .success && dot == expectedDOT)
        #expect(dot.contains("(post-deploy)"))

        let (_, included, _) = run("plan --post-deploy --targets=orders@2.0-1")
        #expect(included.contains("orders@2.0-1") && !included.contains("prefs@"))
        #expect(log.all.isEmpty, "plan runs nothing")
    }

    @Test func migrateRunsStartUpWorkThenPostDeployWork() throws {
        let (code, output, errors) = run("migrate")
        #expect(code == .success && errors.isEmpty)
        #expect(log.all == ["orders@1.0", "prefs@1.0", "orders@2.0", "prefs@2.0"])
        #expect(output.contains("Migration to app version 2.0: 4 of 4 steps applied"))
        #expect(output.hasSuffix(
            "1 post-deploy step wait (orders@2.0-1): run 'app migrations migrate --post-deploy' once no process of the previous version serves.\n"))

        let (again, nothing, _) = run("migrate")
        #expect(again == .success && nothing.hasPrefix("Nothing to migrate: the stores are up to date.\n1 post-deploy step wait"))

        let (postDeploy, postOutput, _) = run("migrate --post-deploy")
        #expect(postDeploy == .success)
        #expect(log.all == ["orders@1.0", "prefs@1.0", "orders@2.0", "prefs@2.0", "orders@2.0-1"])
        #expect(postOutput.contains("  orders@2.0-1: applied"))
        #expect(try orders.level() == "2.0-1")
    }

    @Test func migrateWithTargetsAndDryRun() throws {
        let (dry, dryOutput, _) = run("migrate --dry-run --targets orders@2.0")
        #expect(dry == .success && dryOutput.hasSuffix("Dry run: nothing was run.\n"))
        #expect(log.all.isEmpty && orders.store.contents.isEmpty)

        let (code, _, _) = run("migrate --targets orders@1.0,prefs@1.0")
        #expect(code == .success)
        #expect(log.all == ["orders@1.0", "prefs@1.0"])
    }

    @Test func migrateAsksOnATerminalUnlessYes() throws {
        let declined = RecordingConsole(answers: ["n"])
        #expect(command.run(arguments: ["migrate"], console: declined.console(isTerminal: true)) == .declined)
        #expect(declined.output.hasSuffix("Run 4 steps? [y/N] "))
        #expect(declined.errors == "app migrations: migration cancelled: nothing was run.\n")
        #expect(log.all.isEmpty)

        let noAnswer = RecordingConsole()
        #expect(command.run(arguments: ["migrate"], console: noAnswer.console(isTerminal: true)) == .declined)
        #expect(log.all.isEmpty)

        let yes = RecordingConsole(answers: ["anything"])
        #expect(command.run(arguments: ["migrate", "-y"], console: yes.console(isTerminal: true)) == .success)
        #expect(yes.unreadAnswers == 1, "--yes asks nothing")
        #expect(log.all.count == 4)

        let accepted = RecordingConsole(answers: ["yes"])
        #expect(command.run(arguments: ["migrate", "--post-deploy"], console: accepted.console(isTerminal: true)) == .success)
        #expect(log.all.last == "orders@2.0-1")
    }

    @Test func aFailedMigrationExitsOneWithTheReportOnOutputAndTheErrorOnStandardError() throws {
        let failing = try coordinator.manager("broken", store: InMemoryStore<[String]>([], name: "broken store"))
        failing.register("1.0") { _ in throw TestFailure(message: "disk full") }
        let (code, output, errors) = run("migrate")
        #expect(code == .failure)
        #expect(output.contains("broken@1.0: FAILED"))
        #expect(errors.hasPrefix("app migrations: error: Migration broken@1.0 on broken store failed: disk full."))
    }

    @Test func aNewerStoreIsRefused() throws {
        _ = try coordinator.run(postDeploy: true)
        let older = MigrationCoordinator(appVersion: "1.0")
        _ = try older.manager("orders", store: orders.store)
        let (code, _, errors) = MigrationCommandTests.run(MigrationCommand(coordinator: older, commandName: "old"), "migrate")
        #expect(code == .failure)
        #expect(errors.hasPrefix("old: error: "))
        let (check, _, _) = MigrationCommandTests.run(MigrationCommand(coordinator: older, commandName: "old"), "status --check")
        #expect(check == .failure)
    }

    static func run(_ command: MigrationCommand, _ arguments: String) -> (MigrationCommand.ExitCode, String, String) {
        let recorder = RecordingConsole()
        let code = command.run(arguments: arguments.split(separator: " ").map(String.init), console: recorder.console(isTerminal: false))
        return (code, recorder.output, recorder.errors)
    }

    @Test func baselineRecordsOnlyWithoutARecord() throws {
        let (code, output, _) = run("baseline orders 2.0")
        #expect(code == .success)
        #expect(output == "Recorded baseline 2.0 for orders: its migrations at or below 2.0 count as applied.\n")
        #expect(try orders.record().baseline == "2.0")

        let (again, _, errors) = run("baseline orders 1.0")
        #expect(again == .failure)
        #expect(errors.contains("nothing recorded: orders already has a record (level 2.0)"))
        #expect(try orders.record().baseline == "2.0")
    }

    @Test func verifyListsEditedMigrationsAndRepairAcceptsThem() throws {
        let store = InMemoryStore<[String]>([], name: "notes db")
        func command(fingerprint: String) throws -> MigrationCommand {
            let coordinator = MigrationCoordinator(appVersion: "1.0")
            let notes = try coordinator.manager("notes", store: store)
            notes.register("1.0", options: .named("create notes", fingerprint: fingerprint)) { $0.append("1.0") }
            return MigrationCommand(coordinator: coordinator, commandName: "app migrations")
        }
        func run(_ command: MigrationCommand, _ arguments: [String]) -> (MigrationCommand.ExitCode, String, String) {
            let recorder = RecordingConsole()
            return (command.run(arguments: arguments, console: recorder.console(isTerminal: false)), recorder.output, recorder.errors)
        }
        let first = try command(fingerprint: "notes table, v1")
        #expect(run(first, ["migrate"]).0 == .success)
        #expect(run(first, ["verify"]) == (.success, "Verified: no applied migration was edited since it ran.\n", ""))

        let edited = try command(fingerprint: "notes table, v2")
        let was = MigrationFingerprint(of: "notes table, v1"), now = MigrationFingerprint(of: "notes table, v2")
        let (statusCode, status, _) = run(edited, ["status"])
        #expect(statusCode == .success)
        #expect(status.contains("\n  edited:      1.0 (since applied)\n"), "\(status)")
        #expect(status.contains("\nwarning: edited since applied: notes@1.0 (create notes): applied as \(was), now \(now)\n"), "\(status)")
        #expect(status.contains("1 applied migration was edited since it ran: restore it, or accept the edits with "
            + "'app migrations verify --repair'."), "\(status)")
        #expect(run(edited, ["verify"]) == (
            .failure, "Edited since applied:\n  notes@1.0 (create notes): applied as \(was), now \(now)\n",
            "app migrations: error: 1 applied migration was edited since it ran; restore it, or accept the edits with "
                + "'app migrations verify --repair'.\n"))
        #expect(run(edited, ["verify", "--repair"]) == (
            .success, "Accepted the edits of 1 applied migration:\n  notes@1.0 (create notes): applied as \(was), now \(now)\n", ""))
        #expect(run(edited, ["verify"]).0 == .success)
        #expect(!run(edited, ["status"]).1.contains("edited"))
        #expect(store.contents == ["1.0"], "verify and repair run no body")
        #expect(run(edited, ["verify", "now"]).0 == .usage)
    }

    @Test func helpExitsZeroOnStandardOutput() {
        let (code, output, errors) = run("--help")
        #expect(code == .success && errors.isEmpty)
        #expect(output.hasPrefix("USAGE: app migrations <subcommand> [options]\n"))
        #expect(output.contains("  3  status --check: a start-up would run something (with --post-deploy: or a\n"))
        for subcommand in ["status", "plan", "migrate", "baseline", "verify"] {
            let (subcode, suboutput, suberrors) = run("\(subcommand) --help")
            #expect(subcode == .success && suberrors.isEmpty)
            #expect(suboutput.hasPrefix("USAGE: app migrations \(subcommand)"))
        }
        #expect(run("migrate --yes --help").0 == .success)
        #expect(log.all.isEmpty)
    }

    @Test(arguments: [
        ("", "no subcommand given; name one of status, plan, migrate, baseline, verify", "app migrations --help"),
        ("upgrade", "unknown subcommand 'upgrade'; name one of status, plan, migrate, baseline, verify", "app migrations --help"),
        ("migrate --force", "'migrate' has no option '--force'; see its options with 'migrate --help'", "app migrations migrate --help"),
        ("migrate --targets", "'migrate --targets' needs a value; give it after the option, such as --targets orders@2.0", "app migrations migrate --help"),
        ("migrate --targets orders", "'orders' is not a migration; name it as manager@version, such as orders@2.0", "app migrations migrate --help"),
        ("migrate --targets orders@2.x", "'2.x' is not a version (", "app migrations migrate --help"),
        ("migrate now", "'migrate' takes no argument 'now'; see its usage with 'migrate --help'", "app migrations migrate --help"),
        ("plan --json --dot", "'plan' takes --json or --dot, not both; choose one", "app migrations plan --help"),
        ("status --check=yes", "'status' has no option '--check=yes'; see its options with 'status --help'", "app migrations status --help"),
        ("baseline orders", "'baseline' needs a version; see its usage with 'baseline --help'", "app migrations baseline --help"),
        ("baseline", "'baseline' needs a manager; see its usage with 'baseline --help'", "app migrations baseline --help"),
        ("baseline orders 1.0 2.0", "'baseline' takes no argument '2.0'; see its usage with 'baseline --help'", "app migrations baseline --help"),
        ("baseline shipping 1.0", "no manager is named 'shipping'; see the managers with 'status'", "app migrations baseline --help"),
    ])
    func badArgumentsExitTwoAndChangeNothing(arguments: String, message: String, help: String) throws {
        let (code, output, errors) = run(arguments)
        #expect(code == .usage)
        #expect(output.isEmpty)
        #expect(errors.hasPrefix("app migrations: error: \(message)"))
        #expect(errors.hasSuffix("Run '\(help)' for usage.\n"))
        #expect(log.all.isEmpty)
        #expect(try orders.store.readRecords().isEmpty && prefs.store.readRecords().isEmpty)
    }

    /// A target naming no registered migration is a bad argument, as the exit codes document.
    @Test(arguments: ["migrate --targets shipping@1.0", "plan --targets shipping@1.0", "migrate --targets orders@3.0"])
    func anUnknownTargetIsABadArgumentNamingIt(arguments: String) {
        let (code, output, errors) = run(arguments)
        #expect(code == .usage)
        #expect(output.isEmpty)
        #expect(errors.contains(String(arguments.split(separator: " ").last!)))
        #expect(errors.hasSuffix("for usage.\n"), "\(errors)")
        #expect(log.all.isEmpty)
    }

    @Test func exitCodesAreTheDocumentedOnes() {
        #expect(MigrationCommand.ExitCode.allCases.map(\.rawValue) == [0, 1, 2, 3, 4])
    }
}
