import Foundation
import StoreMigrations

/// One invocation of a ``FleetCommand``: its subcommands, each reading its arguments, asking the
/// fleet and writing to the console.
struct FleetCommandSession {
    enum Subcommand: String, CaseIterable {
        case status, plan, migrate

        var summary: String {
            switch self {
            case .status:
                return "Show how many tenants are up to date, to migrate, held, in progress or failed, the managers' levels, "
                    + "and who did what when workers share the fleet."
            case .plan: return "Show the fleet's pending steps, grouped across its tenants, without running anything."
            case .migrate: return "Migrate every tenant that is not up to date."
            }
        }

        var synopsis: String {
            switch self {
            case .status: return "status [--check] [--post-deploy]"
            case .plan: return "plan [--json] [--post-deploy]"
            case .migrate:
                return "migrate [--tenants N] [--connections M] [--canary K | --canary-group NAME] [--max-failures F] [--post-deploy] "
                    + "[--dry-run] [--yes]"
            }
        }

        var options: [(String, String)] {
            let postDeploy = ("--post-deploy", "Include the post-deploy migrations: once no process of the previous version serves.")
            switch self {
            case .status:
                return [
                    ("--check", "Exit with 3 while a tenant has steps a start-up would run, 1 if one cannot be planned."),
                    ("--post-deploy", "With --check, exit with 3 for tenants whose post-deploy steps wait too."),
                ]
            case .plan:
                return [("--json", "The plan as JSON."), postDeploy]
            case .migrate:
                return [
                    ("--tenants N", "At most N tenants at once (default: the number of processors)."),
                    ("--connections M", "At most M connections to each database, shared by the tenants at once (default: the source's)."),
                    ("--canary K", "Migrate the first K tenants first; the rest only if none of them failed."),
                    ("--canary-group NAME", "Migrate the tenants of group NAME first; the rest only if none of them failed."),
                    ("--max-failures F", "Stop starting tenants after more than F failures (a number, or a share such as 5%)."),
                    postDeploy, ("--dry-run", "Show the plan and run nothing."),
                    ("--yes, -y", "Do not ask for confirmation on a terminal."),
                ]
            }
        }
    }

    let fleet: MigrationFleet
    let name: String
    let console: CommandConsole

    var usage: String {
        CommandConsole.usage(
            command: name, purpose: "Migrates the tenants of \(fleet.tenants) to app version \(fleet.appVersion).",
            subcommands: Subcommand.allCases.map { ($0.rawValue, $0.summary) },
            exitCodes: [
                "  0  success; for status --check, no tenant has steps a start-up would run",
                "  1  migrate: a tenant failed, the failure budget was spent or the canary wave failed;",
                "     status --check: a tenant could not be planned or would be refused;",
                "     any subcommand: the tenants could not be listed",
                "  2  bad arguments; nothing was read or run",
                "  3  status --check: tenants have steps a start-up would run (with --post-deploy:",
                "     or post-deploy steps wait)",
                "  4  migrate: the confirmation was declined; nothing was run",
            ])
    }

    func run(_ subcommand: Subcommand, _ arguments: [String]) throws -> FleetCommand.ExitCode {
        let name = subcommand.rawValue
        switch subcommand {
        case .status:
            let parsed = try CommandArguments(arguments, subcommand: name, flags: ["--check": "check", "--post-deploy": "post-deploy"])
            try Self.expectNoPositional(parsed, name)
            return try status(check: parsed.flags.contains("check"), postDeploy: parsed.flags.contains("post-deploy"))
        case .plan:
            let parsed = try CommandArguments(arguments, subcommand: name, flags: ["--json": "json", "--post-deploy": "post-deploy"])
            try Self.expectNoPositional(parsed, name)
            let plan = try fleet.plan(postDeploy: parsed.flags.contains("post-deploy"))
            if parsed.flags.contains("json") {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                console.output(String(decoding: try encoder.encode(plan), as: UTF8.self) + "\n")
            } else {
                console.output(plan.description + "\n")
            }
            return .success
        case .migrate:
            let parsed = try CommandArguments(
                arguments, subcommand: name,
                flags: ["--post-deploy": "post-deploy", "--dry-run": "dry-run", "--yes": "yes", "-y": "yes"],
                valued: ["--tenants", "--connections", "--canary", "--canary-group", "--max-failures"])
            try Self.expectNoPositional(parsed, name)
            let options = try Self.runOptions(parsed, subcommand: name)
            if options.maxConnections != nil, !(fleet.tenants is any ConnectionCappedTenantSource) {
                throw CommandUsageError.connectionCapNotKept(source: fleet.tenants.description, subcommand: name)
            }
            return try migrate(options, dryRun: parsed.flags.contains("dry-run"), confirmed: parsed.flags.contains("yes"))
        }
    }

    private static func expectNoPositional(_ parsed: CommandArguments, _ subcommand: String) throws {
        if let first = parsed.positional.first { throw CommandUsageError.unexpectedArgument(first, subcommand: subcommand) }
    }

    /// The run's options from `migrate`'s arguments; the last of a repeated option counts.
    static func runOptions(_ parsed: CommandArguments, subcommand: String) throws -> FleetRunOptions {
        var options = FleetRunOptions(postDeploy: parsed.flags.contains("post-deploy"))
        if let text = parsed.values["--tenants"]?.last {
            options.maxTenantsInFlight = try positive(text, option: "--tenants", example: "--tenants 8", subcommand: subcommand)
        }
        if let text = parsed.values["--connections"]?.last {
            options.maxConnections = try positive(text, option: "--connections", example: "--connections 4", subcommand: subcommand)
        }
        let canaryCount = parsed.values["--canary"]?.last, canaryGroup = parsed.values["--canary-group"]?.last
        if canaryCount != nil, canaryGroup != nil {
            throw CommandUsageError.conflictingOptions("--canary", "--canary-group", subcommand: subcommand)
        }
        if let canaryCount {
            options.canary = .first(try positive(canaryCount, option: "--canary", example: "--canary 20", subcommand: subcommand))
        }
        if let canaryGroup { options.canary = .group(canaryGroup) }
        if let text = parsed.values["--max-failures"]?.last {
            options.failureBudget = try failureBudget(text, subcommand: subcommand)
        }
        return options
    }

    private static func positive(_ text: String, option: String, example: String, subcommand: String) throws -> Int {
        guard let number = Int(text), number >= 1 else {
            throw CommandUsageError.invalidNumber(
                option: option, text: text, expected: "a whole number of at least 1", example: example, subcommand: subcommand)
        }
        return number
    }

    /// `3` accepts three failed tenants; `5%` five in a hundred of the fleet.
    private static func failureBudget(_ text: String, subcommand: String) throws -> FleetRunOptions.FailureBudget {
        let invalid = CommandUsageError.invalidNumber(
            option: "--max-failures", text: text, expected: "a whole number of at least 0 or a share from 0% to 100%",
            example: "--max-failures 3 or --max-failures 5%", subcommand: subcommand)
        if text.hasSuffix("%") {
            guard let percent = Double(text.dropLast()), (0...100).contains(percent) else { throw invalid }
            return .share(percent / 100)
        }
        guard let count = Int(text), count >= 0 else { throw invalid }
        return .failures(count)
    }

    /// `check` gates a rollout as `migrate status --check` does: it fails only for tenants with
    /// steps a start-up would run, unless `postDeploy` asks that the post-deploy steps be done too.
    private func status(check: Bool, postDeploy: Bool) throws -> FleetCommand.ExitCode {
        let plan = try fleet.plan()
        let held = plan.held.reduce(0) { $0 + $1.tenants }
        var lines = ["Tenants of \(fleet.tenants), to app version \(plan.appVersion): \(plan.tenants)"]
        lines.append("  up to date:  \(plan.upToDate)")
        lines.append("  to migrate:  \(plan.toMigrate)")
        lines.append("  held:        \(held)" + (held > 0 ? " (post-deploy steps)" : ""))
        lines.append("  in progress: \(plan.inProgress)")
        lines += plan.inProgressExamples.map { "    \($0)" }
        let namedInProgress = Set(plan.inProgressExamples.map(\.tenant)).count
        if plan.inProgress > namedInProgress { lines.append("    and \(plan.inProgress - namedInProgress) more") }
        lines.append("  failed:      \(plan.failed)")
        lines += plan.failures.map { "    \($0)" }
        if plan.failed > plan.failures.count { lines.append("    and \(plan.failed - plan.failures.count) more") }
        if !plan.levels.isEmpty {
            lines.append("Levels:")
            lines += plan.levels.map { "  \($0)" }
        }
        var next: [String] = []
        if plan.toMigrate > 0 { next.append("'\(name) migrate' migrates \(Self.tenants(plan.toMigrate))") }
        if held > 0 {
            next.append("'\(name) migrate --post-deploy' runs the post-deploy steps of \(Self.tenants(held)) once the previous version is gone")
        }
        if plan.failed > 0 { next.append("\(Self.tenants(plan.failed)) failed: see why above") }
        let summary = next.isEmpty ? "Up to date." : next.joined(separator: "; ") + "."
        // As `migrate status` says it: only post-deploy steps wait, which `--check` passes.
        lines.append(plan.toMigrate == 0 && held > 0 ? "Ready for start-ups: " + summary : summary)
        // Who did what, when workers share the fleet: read from the claims, the same from any machine.
        if fleet.claims != nil { lines.append(try fleet.status().description) }
        console.output(lines.joined(separator: "\n") + "\n")
        guard check else { return .success }
        if plan.failed > 0 {
            console.errors("\(name): error: \(Self.tenants(plan.failed)) could not be planned or would be refused; "
                + "fix the cause shown for each, then check again.\n")
            return .failure
        }
        return plan.toMigrate == 0 && (!postDeploy || held == 0) ? .success : .pending
    }

    private func migrate(_ options: FleetRunOptions, dryRun: Bool, confirmed: Bool) throws -> FleetCommand.ExitCode {
        if dryRun || (console.isTerminal && !confirmed) {
            let plan = try fleet.plan(postDeploy: options.postDeploy)
            if dryRun {
                console.output(plan.description + "\nDry run: nothing was run.\n")
                return .success
            }
            if plan.toMigrate == 0 && plan.failed == 0 {
                console.output(plan.description + "\nNothing to migrate.\n")
                return .success
            }
            console.output(plan.description + "\nMigrate \(Self.tenants(plan.toMigrate + plan.failed))? [y/N] ")
            let answer = console.readLine()?.trimmingCharacters(in: .whitespaces).lowercased()
            guard answer == "y" || answer == "yes" else {
                console.errors("\(name): migration cancelled: nothing was run.\n")
                return .declined
            }
        }
        let console = console
        let report = try fleet.migrate(options) { event in
            if case .failed = event { console.output("\(event)\n") }
            if case .started = event { return }
            let progress = event.progress
            // About twenty lines whatever the fleet's size: each ending tenant adds one to
            // `ended`, so each step's multiple is met once.
            let step = max(1, progress.total / 20)
            if progress.ended % step == 0 || progress.ended == progress.total { console.output("\(progress)\n") }
        }
        console.output(report.description + "\n")
        guard !report.succeeded else { return .success }
        var problems: [String] = []
        if !report.failures.isEmpty {
            let failed = report.failures.map(\.tenant.key)
            problems.append("\(Self.tenants(failed.count)) failed (" + Self.listed(failed, limit: 5) + ")")
        }
        if let stop = report.stop { problems.append("\(stop)") }
        console.errors("\(name): error: " + problems.joined(separator: "; ")
            + "; fix the cause and run '\(name) migrate' again: it takes only the tenants not up to date.\n")
        return .failure
    }

    /// `1 tenant`, `842 tenants`.
    private static func tenants(_ count: Int) -> String { "\(count) tenant\(count == 1 ? "" : "s")" }

    /// `a, b, c, d, e and 3 more`.
    private static func listed(_ keys: [String], limit: Int) -> String {
        keys.prefix(limit).joined(separator: ", ") + (keys.count > limit ? " and \(keys.count - limit) more" : "")
    }
}
