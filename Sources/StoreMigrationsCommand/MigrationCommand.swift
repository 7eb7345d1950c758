import Foundation
import StoreMigrations

/// The migration command of an app's own executable, for deploy pipelines and operators: shows
/// the stores' state and plan, runs migrations as a release step (post-deploy ones included when
/// told), records baselines. It parses its own arguments and needs no package but the core.
///
/// ```swift
/// // orders-service migrations status --check; orders-service migrations migrate --post-deploy --yes
/// let arguments = CommandLine.arguments.dropFirst()
/// if arguments.first == "migrations" {
///     let command = MigrationCommand(
///         coordinator: try OrdersService.coordinator(), commandName: "orders-service migrations")
///     exit(command.run(arguments: Array(arguments.dropFirst())).rawValue)
/// }
/// ```
///
/// Subcommands (each takes `--help`):
/// - `status [--check] [--post-deploy]`: per manager, the applied, pending, late, ahead,
///   in-progress (with how far) and post-deploy migrations, and the applied ones edited since
///   they ran. `--check` exits with ``ExitCode/pending`` when a start-up would run anything, so
///   that a pipeline gates its rollout on it while post-deploy migrations wait; with
///   `--post-deploy`, waiting post-deploy migrations count too (the release job is done).
/// - `plan [--json | --dot] [--targets LIST] [--post-deploy]`: what `migrate` would run.
/// - `migrate [--targets LIST] [--post-deploy] [--dry-run] [--yes]`: runs the pending migrations
///   to their end (deferred ones included: a release step has no background to leave them to);
///   asks for confirmation when standard input and output are a terminal, unless `--yes`.
/// - `baseline MANAGER VERSION`: records a baseline mark for a manager that has no record yet.
/// - `verify [--repair]`: lists the applied migrations whose fingerprints changed since they
///   ran (``/StoreMigrations/MigrationFingerprint``) and exits with ``ExitCode/failure`` if any;
///   `--repair` accepts the edits instead (``/StoreMigrations/MigrationManager/repairFingerprints()``).
///
/// Results go to standard output, errors to standard error; ``ExitCode`` lists the exit codes.
public struct MigrationCommand: Sendable {
    /// How the command ends, as the process's exit status.
    public enum ExitCode: Int32, Sendable, CaseIterable {
        /// Done; for `status --check`, nothing a start-up would run is pending.
        case success = 0
        /// A migration failed, a store could not be read, the plan is invalid, or the stores
        /// refuse the run (a store newer than the app); for `verify`, an applied migration was
        /// edited since it ran. The message says which.
        case failure = 1
        /// The arguments are wrong (a target that names no registered migration included);
        /// nothing was run.
        case usage = 2
        /// `status --check`: a start-up would run something; with `--post-deploy`, a post-deploy
        /// migration waits too.
        case pending = 3
        /// `migrate`: the confirmation was declined; nothing was run.
        case declined = 4
    }

    /// The coordinator whose migrations the command shows and runs.
    let coordinator: MigrationCoordinator
    /// How usage and messages name the command, such as `"orders-service migrations"`.
    let commandName: String

    /// - Parameters:
    ///   - coordinator: The app's coordinator, its managers created and migrations registered.
    ///   - commandName: How usage and messages name the command; the executable's name when `nil`.
    public init(coordinator: MigrationCoordinator, commandName: String? = nil) {
        self.coordinator = coordinator
        self.commandName = commandName ?? URL(fileURLWithPath: CommandLine.arguments.first ?? "migrations").lastPathComponent
    }

    /// Runs the command with `arguments` (a subcommand and its options, without the program's
    /// name) on the process's standard streams.
    ///
    /// It blocks its thread until the migrations it runs end: call it from the `main` of a
    /// process that does nothing else meanwhile (an `async` one included, as a command's process
    /// then only waits for it), not from a server's request handlers.
    public func run(arguments: [String]) -> ExitCode {
        run(arguments: arguments, console: .standard)
    }

    /// Runs the command on `console`'s streams.
    package func run(arguments: [String], console: CommandConsole) -> ExitCode {
        let session = CommandSession(coordinator: coordinator, name: commandName, console: console)
        guard let first = arguments.first else {
            return session.usageError(CommandUsageError.missingSubcommand(choices: CommandSession.Subcommand.names), subcommand: nil)
        }
        if first == "--help" || first == "-h" || first == "help" {
            console.output(session.usage)
            return .success
        }
        guard let subcommand = CommandSession.Subcommand(rawValue: first) else {
            return session.usageError(CommandUsageError.unknownSubcommand(first, choices: CommandSession.Subcommand.names), subcommand: nil)
        }
        let rest = Array(arguments.dropFirst())
        if rest.contains("--help") || rest.contains("-h") {
            console.output(session.usage(of: subcommand))
            return .success
        }
        do {
            return try session.run(subcommand, rest)
        } catch let error as CommandUsageError {
            return session.usageError(error, subcommand: subcommand)
        } catch let error as MigrationError where Self.isAboutArguments(error) {
            return session.usageError(error, subcommand: subcommand)
        } catch let error as MigrationRunError {
            console.output(error.report.description + "\n")
            console.errors("\(commandName): error: \(error)\n")
            return .failure
        } catch {
            console.errors("\(commandName): error: \(error)\n")
            return .failure
        }
    }

    /// A `--targets` item that names no registered migration, or one past the app version, is a
    /// bad argument like a malformed one.
    private static func isAboutArguments(_ error: MigrationError) -> Bool {
        switch error {
        case .unknownTarget, .targetAhead: return true
        default: return false
        }
    }
}
