import Foundation
import StoreMigrations

/// One invocation of a ``MigrationCommand``: its subcommands, each reading its arguments, asking
/// the coordinator and writing to the console.
struct CommandSession {
    /// The subcommands.
    enum Subcommand: String, CaseIterable {
        case status, plan, migrate, baseline, verify

        static var names: [String] { allCases.map(\.rawValue) }

        var summary: String {
            switch self {
            case .status: return "Show each manager's applied, pending, late, ahead, in-progress and post-deploy migrations."
            case .plan: return "Show what 'migrate' would run, in order, without running anything."
            case .migrate: return "Run the pending migrations."
            case .baseline: return "Record a baseline mark for a manager that has no record yet."
            case .verify: return "List applied migrations edited since they ran (their fingerprints changed)."
            }
        }

        var synopsis: String {
            switch self {
            case .status: return "status [--check] [--post-deploy]"
            case .plan: return "plan [--json | --dot] [--targets LIST] [--post-deploy]"
            case .migrate: return "migrate [--targets LIST] [--post-deploy] [--dry-run] [--yes]"
            case .baseline: return "baseline MANAGER VERSION"
            case .verify: return "verify [--repair]"
            }
        }

        var options: [(String, String)] {
            let targets = ("--targets LIST", "Only these migrations (manager@version, comma-separated) and what they depend on.")
            let postDeploy = ("--post-deploy", "Include the post-deploy migrations: once no process of the previous version serves.")
            switch self {
            case .status:
                return [
                    ("--check", "Exit with 3 when a start-up would run anything: the stores are not ready for the release."),
                    ("--post-deploy", "With --check, exit with 3 for waiting post-deploy migrations too."),
                ]
            case .plan:
                return [("--json", "The plan as JSON."), ("--dot", "The plan as a Graphviz DOT digraph."), targets, postDeploy]
            case .migrate:
                return [
                    targets, postDeploy, ("--dry-run", "Show the plan and run nothing."),
                    ("--yes, -y", "Do not ask for confirmation on a terminal."),
                ]
            case .baseline:
                return [("MANAGER VERSION", "Migrations of MANAGER at or below VERSION count as applied.")]
            case .verify:
                return [("--repair", "Accept the edits: record the current fingerprints of the applied migrations.")]
            }
        }
    }

    let coordinator: MigrationCoordinator
    let name: String
    let console: CommandConsole

    var usage: String {
        CommandConsole.usage(
            command: name, purpose: "Migrates the app's stores to app version \(coordinator.appVersion).",
            subcommands: Subcommand.allCases.map { ($0.rawValue, $0.summary) },
            exitCodes: [
                "  0  success; for status --check, nothing a start-up would run is pending",
                "  1  a migration failed, a store could not be read, or the stores refuse the run;",
                "     for verify, an applied migration was edited since it ran",
                "  2  bad arguments; nothing was read or run",
                "  3  status --check: a start-up would run something (with --post-deploy: or a",
                "     post-deploy migration waits)",
                "  4  migrate: the confirmation was declined; nothing was run",
            ])
    }

    func usage(of subcommand: Subcommand) -> String {
        CommandConsole.usage(command: name, synopsis: subcommand.synopsis, summary: subcommand.summary, options: subcommand.options)
    }

    /// - Parameter error: a ``CommandUsageError``, or the coordinator's error about the targets
    ///   the arguments name.
    func usageError(_ error: any Error, subcommand: Subcommand?) -> MigrationCommand.ExitCode {
        console.usageError(error, command: name, subcommand: subcommand?.rawValue)
    }

    func run(_ subcommand: Subcommand, _ arguments: [String]) throws -> MigrationCommand.ExitCode {
        let name = subcommand.rawValue
        switch subcommand {
        case .status:
            let parsed = try CommandArguments(
                arguments, subcommand: name, flags: ["--check": "check", "--post-deploy": "post-deploy"])
            try expectNoPositional(parsed, name)
            return try status(check: parsed.flags.contains("check"), postDeploy: parsed.flags.contains("post-deploy"))
        case .plan:
            let parsed = try CommandArguments(
                arguments, subcommand: name, flags: ["--json": "json", "--dot": "dot", "--post-deploy": "post-deploy"],
                valued: ["--targets"])
            try expectNoPositional(parsed, name)
            if parsed.flags.isSuperset(of: ["json", "dot"]) { throw CommandUsageError.conflictingOptions("--json", "--dot", subcommand: name) }
            let plan = try coordinator.plan(targets: try parsed.targets(), postDeploy: parsed.flags.contains("post-deploy"))
            if parsed.flags.contains("json") {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                console.output(String(decoding: try encoder.encode(plan), as: UTF8.self) + "\n")
            } else if parsed.flags.contains("dot") {
                console.output(plan.graphviz())
            } else {
                console.output(plan.description + "\n")
            }
            return .success
        case .migrate:
            let parsed = try CommandArguments(
                arguments, subcommand: name,
                flags: ["--post-deploy": "post-deploy", "--dry-run": "dry-run", "--yes": "yes", "-y": "yes"],
                valued: ["--targets"])
            try expectNoPositional(parsed, name)
            return try migrate(
                targets: try parsed.targets(), postDeploy: parsed.flags.contains("post-deploy"),
                dryRun: parsed.flags.contains("dry-run"), confirmed: parsed.flags.contains("yes"))
        case .baseline:
            let parsed = try CommandArguments(arguments, subcommand: name)
            guard parsed.positional.count >= 1 else { throw CommandUsageError.missingArgument(name: "manager", subcommand: name) }
            guard parsed.positional.count >= 2 else { throw CommandUsageError.missingArgument(name: "version", subcommand: name) }
            if parsed.positional.count > 2 { throw CommandUsageError.unexpectedArgument(parsed.positional[2], subcommand: name) }
            return try baseline(manager: parsed.positional[0], at: try CommandArguments.version(parsed.positional[1]))
        case .verify:
            let parsed = try CommandArguments(arguments, subcommand: name, flags: ["--repair": "repair"])
            try expectNoPositional(parsed, name)
            return try verify(repair: parsed.flags.contains("repair"))
        }
    }

    private func expectNoPositional(_ parsed: CommandArguments, _ subcommand: String) throws {
        if let first = parsed.positional.first { throw CommandUsageError.unexpectedArgument(first, subcommand: subcommand) }
    }

    /// `check` gates a rollout: it fails only for what a start-up would run, unless `postDeploy`
    /// asks that the post-deploy migrations be done too.
    private func status(check: Bool, postDeploy: Bool) throws -> MigrationCommand.ExitCode {
        let (plan, records) = try coordinator.planAndRecords(postDeploy: false)
        var lines = ["Migrations to app version \(plan.appVersion):"]
        for (manager, record) in zip(plan.managers, records) {
            var heading = "\(manager.name) (\(manager.store)): level \(manager.level?.description ?? "none")"
            if let firstLaunch = manager.firstLaunch { heading += ", first launch (\(firstLaunch))" }
            if let newer = manager.newerStore { heading += ", newer than the app (\(newer.rawValue))" }
            lines.append(heading)
            var applied = list(record.appliedVersions)
            if let baseline = record.baseline { applied += " (baseline \(baseline))" }
            let pending = manager.pending.filter { !manager.deferred.contains($0) }
            let rows: [(String, String)] = [
                ("applied", applied),
                ("pending", list(pending)),
                ("deferred", list(manager.deferred)),
                ("late", manager.late.isEmpty ? "none" : list(manager.late) + " (\(manager.latePolicy.rawValue))"),
                ("ahead", list(manager.ahead)),
                ("in progress", manager.inProgress.isEmpty ? "none" : manager.inProgress.map(\.description).joined(separator: "; ")),
                ("post-deploy", list(manager.postDeploy)),
                ("edited", manager.changedFingerprints.map { "\($0.migration.version) (since applied)" }.joined(separator: ", ")),
            ]
            lines += rows.filter { ($0.0 != "deferred" || !manager.deferred.isEmpty) && ($0.0 != "edited" || !manager.changedFingerprints.isEmpty) }
                .map { "  " + ($0.0 + ":").padding(toLength: 13, withPad: " ", startingAt: 0) + $0.1 }
        }
        lines += plan.diagnostics.map { "note: \($0)" }
        let edited = plan.managers.flatMap(\.changedFingerprints)
        lines += edited.map { "warning: edited since applied: \($0)" }
        if !edited.isEmpty {
            lines.append("\(edited.count) applied migration\(edited.count == 1 ? " was" : "s were") edited since "
                + "\(edited.count == 1 ? "it" : "they") ran: restore \(edited.count == 1 ? "it" : "them"), or accept the edits with "
                + "'\(name) verify --repair'.")
        }
        let postDeployCount = plan.postDeploySteps.count
        if let refusal = plan.blockingErrors.first {
            lines.append("Refused: \(refusal)")
        } else if plan.steps.isEmpty && postDeployCount == 0 {
            lines.append("Up to date.")
        } else {
            let waiting = "\(postDeployCount) post-deploy step\(postDeployCount == 1 ? "" : "s") wait"
                + "\(postDeployCount == 1 ? "s" : "") ('\(name) migrate --post-deploy' once the previous version is gone)"
            if plan.steps.isEmpty {
                // Nothing a start-up runs: the per-manager "pending: none" and this line agree.
                lines.append("Ready for start-ups: nothing pending; " + waiting + ".")
            } else {
                lines.append("Pending: \(plan.steps.count) step\(plan.steps.count == 1 ? "" : "s")"
                    + (postDeployCount > 0 ? "; and " + waiting : "") + ".")
            }
        }
        console.output(lines.joined(separator: "\n") + "\n")
        guard check else { return .success }
        if let refusal = plan.blockingErrors.first {
            console.errors("\(name): error: \(refusal)\n")
            return .failure
        }
        return plan.steps.isEmpty && (!postDeploy || postDeployCount == 0) ? .success : .pending
    }

    private func migrate(
        targets: [MigrationReference]?, postDeploy: Bool, dryRun: Bool, confirmed: Bool
    ) throws -> MigrationCommand.ExitCode {
        let plan = try coordinator.plan(targets: targets, postDeploy: postDeploy)
        if let refusal = plan.blockingErrors.first {
            console.errors("\(name): error: \(refusal)\n")
            return .failure
        }
        var waiting = ""
        if !plan.postDeploySteps.isEmpty {
            waiting = "\(plan.postDeploySteps.count) post-deploy step\(plan.postDeploySteps.count == 1 ? "" : "s") wait "
                + "(\(list(plan.postDeploySteps.map(\.id.description)))): run '\(name) migrate --post-deploy' once no "
                + "process of the previous version serves.\n"
        }
        guard !plan.steps.isEmpty else {
            console.output("Nothing to migrate: the stores are up to date.\n" + waiting)
            return .success
        }
        if dryRun {
            console.output(plan.description + "\nDry run: nothing was run.\n")
            return .success
        }
        if console.isTerminal, !confirmed {
            console.output("Pending:\n" + plan.steps.map { "  \($0)\n" }.joined()
                + "Run \(plan.steps.count) step\(plan.steps.count == 1 ? "" : "s")? [y/N] ")
            let answer = console.readLine()?.trimmingCharacters(in: .whitespaces).lowercased()
            guard answer == "y" || answer == "yes" else {
                console.errors("\(name): migration cancelled: nothing was run.\n")
                return .declined
            }
        }
        let report = try coordinator.runToCompletion(targets: targets, postDeploy: postDeploy)
        console.output(report.description + "\n" + waiting)
        return .success
    }

    private func baseline(manager: String, at version: Version) throws -> MigrationCommand.ExitCode {
        guard let recorded = try coordinator.baseline(manager: manager, at: version) else {
            throw CommandUsageError.unknownManager(manager)
        }
        if recorded {
            console.output("Recorded baseline \(version) for \(manager): its migrations at or below \(version) count as applied.\n")
            return .success
        }
        let level = try coordinator.plan().managers.first { $0.name == manager }?.level
        console.errors("\(name): error: nothing recorded: \(manager) already has a record (level \(level?.description ?? "none")); "
            + "a baseline applies only to a manager with no record, so leave it as it is.\n")
        return .failure
    }

    /// Managers whose policy is ``FingerprintPolicy/ignore`` are not checked.
    private func verify(repair: Bool) throws -> MigrationCommand.ExitCode {
        let plan = try coordinator.plan()
        let edited = plan.managers.filter { !$0.changedFingerprints.isEmpty }
        guard !edited.isEmpty else {
            console.output("Verified: no applied migration was edited since it ran.\n")
            return .success
        }
        let changes = edited.flatMap(\.changedFingerprints)
        let count = "\(changes.count) applied migration\(changes.count == 1 ? " was" : "s were") edited since \(changes.count == 1 ? "it" : "they") ran"
        var lines = changes.map { "  \($0)" }
        guard repair else {
            console.output("Edited since applied:\n" + lines.joined(separator: "\n") + "\n")
            console.errors("\(name): error: \(count); restore \(changes.count == 1 ? "it" : "them"), or accept the edits "
                + "with '\(name) verify --repair'.\n")
            return .failure
        }
        for manager in edited { _ = try coordinator.repairFingerprints(manager: manager.name) }
        lines.insert("Accepted the edits of \(changes.count) applied migration\(changes.count == 1 ? "" : "s"):", at: 0)
        console.output(lines.joined(separator: "\n") + "\n")
        return .success
    }

    private func list(_ items: [some CustomStringConvertible]) -> String {
        items.isEmpty ? "none" : items.map(\.description).joined(separator: ", ")
    }
}
