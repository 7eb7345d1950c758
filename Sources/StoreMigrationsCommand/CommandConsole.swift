import Foundation

/// Where a ``MigrationCommand`` writes and reads: the process's standard streams, or, in tests,
/// closures that collect what it writes and answer its question.
package struct CommandConsole: Sendable {
    /// Results: standard output.
    package var output: @Sendable (String) -> Void
    /// Errors: standard error.
    package var errors: @Sendable (String) -> Void
    /// Whether a person is there to answer: standard input and output are terminals.
    package var isTerminal: Bool
    /// A line of the answer, without its line break; `nil` at the end of input.
    package var readLine: @Sendable () -> String?

    package init(
        output: @escaping @Sendable (String) -> Void, errors: @escaping @Sendable (String) -> Void, isTerminal: Bool,
        readLine: @escaping @Sendable () -> String?
    ) {
        self.output = output
        self.errors = errors
        self.isTerminal = isTerminal
        self.readLine = readLine
    }

    /// The process's standard output, error and input.
    package static var standard: CommandConsole {
        CommandConsole(
            output: { FileHandle.standardOutput.write(Data($0.utf8)) },
            errors: { FileHandle.standardError.write(Data($0.utf8)) },
            isTerminal: isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1,
            readLine: { Swift.readLine() })
    }
}

extension CommandConsole {
    /// Reports arguments the command cannot act on, and where its usage is, on standard error.
    func usageError(_ error: any Error, command: String, subcommand: String?) -> MigrationCommand.ExitCode {
        errors("\(command): error: \(error)\n")
        errors("Run '\(command)\(subcommand.map { " \($0)" } ?? "") --help' for usage.\n")
        return .usage
    }

    /// The command's `--help`: what it does, its subcommands and its exit codes.
    static func usage(command: String, purpose: String, subcommands: [(String, String)], exitCodes: [String]) -> String {
        var lines = ["USAGE: \(command) <subcommand> [options]", "", purpose, "", "SUBCOMMANDS:"]
        lines += subcommands.map { "  " + $0.0.padding(toLength: 10, withPad: " ", startingAt: 0) + $0.1 }
        lines += ["", "Run '\(command) <subcommand> --help' for its options.", "", "EXIT CODES:"] + exitCodes
        return lines.joined(separator: "\n") + "\n"
    }

    /// A subcommand's `--help`: its synopsis, what it does, and its options.
    static func usage(command: String, synopsis: String, summary: String, options: [(String, String)]) -> String {
        var lines = ["USAGE: \(command) \(synopsis)", "", summary, "", "OPTIONS:"]
        lines += options.map { "  " + $0.0.padding(toLength: 18, withPad: " ", startingAt: 0) + $0.1 }
        return lines.joined(separator: "\n") + "\n"
    }
}
