import StoreMigrations

/// Arguments a ``MigrationCommand`` cannot act on: reported on standard error with the one thing
/// to do about it, exit code ``MigrationCommand/ExitCode/usage``.
enum CommandUsageError: Error, Equatable, CustomStringConvertible {
    /// `choices`: the subcommands the command has, for the message.
    case missingSubcommand(choices: [String])
    case unknownSubcommand(String, choices: [String])
    case unknownOption(String, subcommand: String)
    case missingValue(option: String, subcommand: String)
    case unexpectedArgument(String, subcommand: String)
    case missingArgument(name: String, subcommand: String)
    case conflictingOptions(String, String, subcommand: String)
    case invalidTarget(String)
    case invalidVersion(String, reason: String)
    case unknownManager(String)
    /// A number the option needs (`expected` says which, such as "a whole number of at least 1"),
    /// given as `text`; `example` is a valid use.
    case invalidNumber(option: String, text: String, expected: String, example: String, subcommand: String)
    /// `--connections` given for a fleet whose tenant source shares no connections to cap.
    case connectionCapNotKept(source: String, subcommand: String)

    var description: String {
        switch self {
        case .missingSubcommand(let choices):
            return "no subcommand given; name one of " + choices.joined(separator: ", ")
        case .unknownSubcommand(let name, let choices):
            return "unknown subcommand '\(name)'; name one of " + choices.joined(separator: ", ")
        case .unknownOption(let option, let subcommand):
            return "'\(subcommand)' has no option '\(option)'; see its options with '\(subcommand) --help'"
        case .missingValue(let option, let subcommand):
            return "'\(subcommand) \(option)' needs a value; give it after the option, such as \(option) orders@2.0"
        case .unexpectedArgument(let argument, let subcommand):
            return "'\(subcommand)' takes no argument '\(argument)'; see its usage with '\(subcommand) --help'"
        case .missingArgument(let name, let subcommand):
            return "'\(subcommand)' needs a \(name); see its usage with '\(subcommand) --help'"
        case .conflictingOptions(let first, let second, let subcommand):
            return "'\(subcommand)' takes \(first) or \(second), not both; choose one"
        case .invalidTarget(let text):
            return "'\(text)' is not a migration; name it as manager@version, such as orders@2.0"
        case .invalidVersion(let text, let reason):
            return "'\(text)' is not a version (\(reason)); give one such as 1.2 or 1.2-1"
        case .unknownManager(let name):
            return "no manager is named '\(name)'; see the managers with 'status'"
        case let .invalidNumber(option, text, expected, example, subcommand):
            return "'\(subcommand) \(option)' takes \(expected), not '\(text)'; give one such as \(example)"
        case let .connectionCapNotKept(source, subcommand):
            return "'\(subcommand) --connections' cannot be kept: the stores of \(source) share no connections; "
                + "leave it out and bound the connections with --tenants"
        }
    }
}
