import Foundation

/// `swift run demo [--dir PATH] [--rows N] [--kill-after SECONDS]`.
struct DemoOptions {
    /// Where the stores are: created there when it is empty or missing, resumed when it holds them.
    var directory: URL?
    /// Notes in the 1.0 database.
    var rows = 20_000
    /// When set, the demo kills itself with `SIGKILL` this many seconds after it starts.
    var killAfter: Double?
    /// `--help`: print the usage and do nothing else.
    var showsHelp = false

    init(arguments: [String]) throws {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--dir":
                guard let path = iterator.next() else { throw DemoError.usage("--dir needs a path") }
                directory = URL(fileURLWithPath: path, isDirectory: true)
            case "--rows":
                guard let text = iterator.next(), let rows = Int(text), rows > 0 else {
                    throw DemoError.usage("--rows needs a positive number")
                }
                self.rows = rows
            case "--kill-after":
                guard let text = iterator.next(), let seconds = Double(text), seconds >= 0, seconds.isFinite else {
                    throw DemoError.usage("--kill-after needs a number of seconds")
                }
                killAfter = seconds
            case "--help", "-h":
                showsHelp = true
            default:
                throw DemoError.usage("unknown argument \(argument)")
            }
        }
    }
}

extension DemoOptions {
    /// What `--help` prints, and a wrong argument after its problem.
    static let usage = "usage: demo [--dir PATH] [--rows N] [--kill-after SECONDS]\n"
        + "  --dir PATH            where the stores are: an empty or new directory gets the 1.0 stores;\n"
        + "                        one holding them (a run killed part-way) resumes the launch of 2.0\n"
        + "                        (default: a new temporary directory)\n"
        + "  --rows N              notes in the database (default 20000)\n"
        + "  --kill-after SECONDS  kill the demo with SIGKILL after that long; run it again on the\n"
        + "                        same --dir to see the launch resume"
}

/// Why the demo cannot start.
enum DemoError: Error, CustomStringConvertible {
    case usage(String)
    case foreignDirectory(URL, unknown: [String])

    var description: String {
        switch self {
        case .usage(let problem):
            return "\(problem)\n" + DemoOptions.usage
        case let .foreignDirectory(url, unknown):
            return "\(url.path) holds files that are not the demo's (\(unknown.prefix(5).joined(separator: ", ")))."
                + " Give --dir a new or empty directory, or one a previous demo run used."
        }
    }
}
