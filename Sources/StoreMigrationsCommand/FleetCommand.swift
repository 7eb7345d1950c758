import Foundation
import StoreMigrations

/// The fleet command of a service's own executable: the state of every tenant's stores, the
/// fleet's plan, and a fleet run with a cap on tenants, a failure budget and a canary wave, over
/// a ``/StoreMigrations/MigrationFleet``. It parses its own arguments and needs no package but the core.
///
/// ```swift
/// // orders-service fleet status --check; orders-service fleet migrate --tenants 8 --canary 20
/// let arguments = CommandLine.arguments.dropFirst()
/// if arguments.first == "fleet" {
///     let command = FleetCommand(fleet: OrdersService.fleet(), commandName: "orders-service fleet")
///     exit(command.run(arguments: Array(arguments.dropFirst())).rawValue)
/// }
/// ```
///
/// Subcommands (each takes `--help`):
/// - `status [--check] [--post-deploy]`: how many tenants are up to date, to migrate, held for
///   the deployment (post-deploy steps), part way (resumable steps, how far) or failed (named,
///   with the error), and each manager's levels across the fleet; for a fleet shared by workers
///   (``/StoreMigrations/FleetClaims``), who did what (``/StoreMigrations/FleetStatus``), the
///   same from any machine. `--check` exits as
///   ``MigrationCommand``'s does: with ``MigrationCommand/ExitCode/pending`` while a tenant has
///   steps a start-up would run (so that a pipeline gates its rollout on it while post-deploy
///   steps wait), with `--post-deploy` also while a tenant's post-deploy steps wait, and with
///   ``MigrationCommand/ExitCode/failure`` when a tenant could not be planned or would be refused.
/// - `plan [--json] [--post-deploy]`: the fleet's plan (``/StoreMigrations/FleetPlan``): the
///   pending steps grouped across the fleet, `842 tenants: orders@2.0, orders@2.1`.
/// - `migrate [--tenants N] [--connections M] [--canary K | --canary-group NAME] [--max-failures F]
///   [--post-deploy] [--dry-run] [--yes]`: migrates every tenant not up to date, at most `N` at
///   once sharing at most `M` connections to each database
///   (``/StoreMigrations/FleetRunOptions/maxConnections``), writing a progress line as the
///   fleet advances, each failure as it happens, and a summary naming the failed tenants.
///
/// Results go to standard output, errors to standard error; the exit codes are those of
/// ``MigrationCommand`` (``ExitCode``).
public struct FleetCommand: Sendable {
    /// How the command ends, as the process's exit status: the codes of ``MigrationCommand``, so
    /// that a pipeline reads both commands alike.
    public typealias ExitCode = MigrationCommand.ExitCode

    /// The fleet the command shows and migrates.
    let fleet: MigrationFleet
    /// How usage and messages name the command, such as `"orders-service fleet"`.
    let commandName: String

    /// - Parameters:
    ///   - fleet: The service's fleet: its tenant source and the template that registers a
    ///     tenant's managers.
    ///   - commandName: How usage and messages name the command; the executable's name and
    ///     `fleet` when `nil`.
    public init(fleet: MigrationFleet, commandName: String? = nil) {
        self.fleet = fleet
        self.commandName = commandName
            ?? URL(fileURLWithPath: CommandLine.arguments.first ?? "migrations").lastPathComponent + " fleet"
    }

    /// Runs the command with `arguments` (a subcommand and its options, without the program's
    /// name) on the process's standard streams.
    ///
    /// It blocks its thread until the fleet run ends: call it from the `main` of a process that
    /// does nothing else meanwhile, as ``MigrationCommand/run(arguments:)``.
    public func run(arguments: [String]) -> ExitCode {
        run(arguments: arguments, console: .standard)
    }

    /// Runs the command on `console`'s streams.
    package func run(arguments: [String], console: CommandConsole) -> ExitCode {
        let session = FleetCommandSession(fleet: fleet, name: commandName, console: console)
        let names = FleetCommandSession.Subcommand.allCases.map(\.rawValue)
        guard let first = arguments.first else {
            return console.usageError(CommandUsageError.missingSubcommand(choices: names), command: commandName, subcommand: nil)
        }
        if first == "--help" || first == "-h" || first == "help" {
            console.output(session.usage)
            return .success
        }
        guard let subcommand = FleetCommandSession.Subcommand(rawValue: first) else {
            return console.usageError(CommandUsageError.unknownSubcommand(first, choices: names), command: commandName, subcommand: nil)
        }
        let rest = Array(arguments.dropFirst())
        if rest.contains("--help") || rest.contains("-h") {
            console.output(CommandConsole.usage(
                command: commandName, synopsis: subcommand.synopsis, summary: subcommand.summary, options: subcommand.options))
            return .success
        }
        do {
            return try session.run(subcommand, rest)
        } catch let error as CommandUsageError {
            return console.usageError(error, command: commandName, subcommand: subcommand.rawValue)
        } catch {
            console.errors("\(commandName): error: \(error)\n")
            return .failure
        }
    }
}
