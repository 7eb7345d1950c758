import Foundation
import StoreMigrations

/// A subcommand's arguments, parsed against what it accepts: flags (`--yes`), options with a
/// value (`--targets a@1.0,b@2.0` or `--targets=…`, repeatable) and positional arguments.
struct CommandArguments: Equatable {
    var flags: Set<String> = []
    var values: [String: [String]] = [:]
    var positional: [String] = []

    /// - Parameters:
    ///   - flags: The flags the subcommand accepts, with their short forms (`-y` for `--yes`).
    ///   - valued: The options that take a value.
    /// - Throws: ``CommandUsageError`` for an option it does not accept or one missing its value.
    init(
        _ arguments: [String], subcommand: String, flags accepted: [String: String] = [:], valued: Set<String> = []
    ) throws {
        var index = 0
        var onlyPositional = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard !onlyPositional, argument.hasPrefix("-"), argument != "-" else {
                positional.append(argument)
                continue
            }
            if argument == "--" {
                onlyPositional = true
                continue
            }
            let name = String(argument.prefix { $0 != "=" })
            let inline = argument.contains("=") ? String(argument.drop { $0 != "=" }.dropFirst()) : nil
            if valued.contains(name) {
                if let inline {
                    values[name, default: []].append(inline)
                } else if index < arguments.count, !arguments[index].hasPrefix("-") {
                    values[name, default: []].append(arguments[index])
                    index += 1
                } else {
                    throw CommandUsageError.missingValue(option: name, subcommand: subcommand)
                }
            } else if inline == nil, let flag = accepted[name] {
                flags.insert(flag)
            } else {
                throw CommandUsageError.unknownOption(argument, subcommand: subcommand)
            }
        }
    }

    /// The migrations named by `--targets` (comma-separated, `manager@version`), or `nil` when
    /// none is.
    func targets() throws -> [MigrationReference]? {
        guard let lists = values["--targets"] else { return nil }
        return try lists.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }.map { item in
            let text = item.trimmingCharacters(in: .whitespaces)
            // A manager's name may hold an "@"; a version never does.
            guard let at = text.lastIndex(of: "@"), at != text.startIndex else { throw CommandUsageError.invalidTarget(text) }
            let version = try Self.version(String(text[text.index(after: at)...]))
            return MigrationReference(manager: String(text[..<at]), version: version)
        }
    }

    static func version(_ text: String) throws -> Version {
        do {
            return try Version(parsing: text)
        } catch let error as VersionError {
            throw CommandUsageError.invalidVersion(text, reason: error.reason)
        }
    }
}
