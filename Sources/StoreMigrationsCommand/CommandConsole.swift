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
