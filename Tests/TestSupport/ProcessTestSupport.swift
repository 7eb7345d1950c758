import Foundation
import Testing
import StoreMigrations

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// Finds an executable that `swift test` builds beside the test bundle (every executable target
/// of the package: the crash and replica runners, the demo), or the one the environment variable
/// `override` names.
package func builtExecutable(named name: String, override: String) throws -> URL {
    var candidates: [URL] = []
    if let path = ProcessInfo.processInfo.environment[override] { candidates.append(URL(fileURLWithPath: path)) }
    // Linux runs the test bundle itself (`.build/debug/X.xctest`); Darwin runs a helper that
    // loads `.build/debug/X.xctest/Contents/MacOS/X`. Either way the build folder is an ancestor.
    for start in [Bundle.main.executableURL, Bundle.main.bundleURL] + Bundle.allBundles.map(\.bundleURL) {
        var folder = start?.deletingLastPathComponent()
        for _ in 0..<4 {
            guard let current = folder else { break }
            candidates.append(current.appendingPathComponent(name))
            folder = current.deletingLastPathComponent()
        }
    }
    guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
        throw ProcessTestFailure(
            "\(name) was not found beside the test bundle (looked at " + candidates.map(\.path).joined(separator: ", ")
                + "); build it with `swift build` or name it in \(override)")
    }
    return found
}

/// The `CrashRunner` executable that `swift test` builds beside the test bundle.
package struct CrashRunnerExecutable {
    package let url: URL

    /// Finds the executable in the build folder of the running tests; `CRASH_RUNNER` overrides.
    package init() throws {
        url = try builtExecutable(named: "CrashRunner", override: "CRASH_RUNNER")
    }

    /// Starts the runner with `arguments`; its output goes to files in `logs`.
    package func start(_ arguments: [String], logs: URL) throws -> ChildProcess {
        try ChildProcess(executable: url, arguments: arguments, logs: logs)
    }

    /// Runs the runner to its end, at most `timeout` seconds.
    package func run(_ arguments: [String], logs: URL, timeout: TimeInterval = eventWaitBound) throws -> ChildProcess.Exit {
        let child = try start(arguments, logs: logs)
        guard let exit = child.wait(timeout: timeout) else {
            child.kill()
            throw ProcessTestFailure("CrashRunner \(arguments.joined(separator: " ")) ran past \(timeout) s")
        }
        return exit
    }

    /// Runs the runner with `arguments` and a file to create once its step holds, waits until it
    /// does, and SIGKILLs it there: a process killed inside the step's transaction.
    package func killWhileHolding(_ arguments: [String], holding: URL, logs: URL) throws -> ChildProcess.Exit {
        let child = try start(arguments + [holding.path], logs: logs)
        let holds = waitUntil { FileManager.default.fileExists(atPath: holding.path) || child.wait(timeout: 0) != nil }
        guard holds, child.wait(timeout: 0) == nil else {
            child.kill()
            throw ProcessTestFailure("CrashRunner \(arguments.joined(separator: " ")) ended or never held inside its step")
        }
        return child.kill()
    }
}

/// A temporary folder for a ``CrashRunnerExecutable`` scenario: `store` holds the stores the
/// processes share, `logs` their output.
package struct ScenarioFolders {
    package let folder: TemporaryFolder
    package let store: URL
    package let logs: URL

    package init() throws {
        folder = try TemporaryFolder()
        store = folder.file("store")
        logs = folder.file("logs")
        for made in [store, logs] { try FileManager.default.createDirectory(at: made, withIntermediateDirectories: true) }
    }
}

/// How an older app's process ended in a rolling deploy; see ``ChildProcess/Exit/rollingDeployOutcome(appVersion:)``.
package enum RollingDeployOutcome: Hashable {
    case succeeded, refusedUnderTheLock, refusedAtPlanning
}

/// A child process started with `posix_spawn`, reaped only by ``wait(timeout:)``, so that its
/// pid cannot be reused before we are done killing it.
package final class ChildProcess {
    package struct Exit: CustomStringConvertible {
        /// The exit status, or `nil` when a signal ended the process.
        package let status: Int32?
        package let signal: Int32?
        package let standardOutput: String
        package let standardError: String

        package var succeeded: Bool { status == 0 }

        /// The `step <id> <outcome>` lines, by step.
        package var stepOutcomes: [String: String] {
            var outcomes: [String: String] = [:]
            for line in standardOutput.split(separator: "\n") where line.hasPrefix("step ") {
                let fields = line.split(separator: " ")
                if fields.count == 3 { outcomes[String(fields[1])] = String(fields[2]) }
            }
            return outcomes
        }

        /// The `level <manager> <level>` lines.
        package var levels: [String] {
            standardOutput.split(separator: "\n").filter { $0.hasPrefix("level ") }.map(String.init)
        }

        /// The levels the runner found under the store's lock: its `seen <step> <level>` lines,
        /// and its `level <manager> <level>` lines (levels after the run).
        package var levelsFound: [Version] {
            standardOutput.split(separator: "\n").compactMap { line in
                let fields = line.split(separator: " ")
                guard fields.count == 3, fields[0] == "seen" || fields[0] == "level" else { return nil }
                return Version(String(fields[2]))
            }
        }

        /// How an app's process ended that raced a newer app's on one store (issue 20): it may
        /// succeed only if no step of its own found the store past `appVersion`; otherwise it
        /// fails with the newer-store error, under the lock (status 1, a failed step) or at
        /// planning (status 2). `nil`, with an issue recorded, for anything else.
        package func rollingDeployOutcome(appVersion: Version) -> RollingDeployOutcome? {
            let refused = standardError.contains("past app version \(appVersion): a newer version of the app wrote it")
            switch status {
            case 0 where levelsFound.allSatisfy { $0 <= appVersion }:
                return .succeeded
            case 1 where refused && stepOutcomes.values.contains("failed"):
                return .refusedUnderTheLock
            case 2 where refused:
                return .refusedAtPlanning
            default:
                Issue.record("app \(appVersion) raced a newer app: \(self)")
                return nil
            }
        }

        package var description: String {
            let end = status.map { "exit status \($0)" } ?? "signal \(signal ?? 0)"
            return "\(end); stdout:\n\(standardOutput)\nstderr:\n\(standardError)"
        }
    }

    package let pid: pid_t
    private let outputURL: URL
    private let errorURL: URL
    private var exit: Exit?

    package init(executable: URL, arguments: [String], logs: URL) throws {
        let name = UUID().uuidString
        outputURL = logs.appendingPathComponent("\(name).out")
        errorURL = logs.appendingPathComponent("\(name).err")

        #if canImport(Darwin)
        var actions: posix_spawn_file_actions_t?
        #else
        var actions = posix_spawn_file_actions_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputURL.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, errorURL.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)

        let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable.path, &actions, nil, argv, environ)
        guard status == 0 else {
            throw ProcessTestFailure("posix_spawn \(executable.path) failed: \(String(cString: strerror(status)))")
        }
        self.pid = pid
    }

    deinit {
        if exit == nil {
            kill()
        }
    }

    /// What the process has written to its standard output so far.
    package var outputSoFar: String { (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "" }

    /// Waits until the process ends or `timeout` seconds pass; `nil` if it is still running.
    package func wait(timeout: TimeInterval) -> Exit? {
        if let exit { return exit }
        let deadline = ContinuousClock.now + .milliseconds(Int(max(0, timeout) * 1_000))
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { break }
            if result < 0, errno != EINTR { return nil }
            if ContinuousClock.now >= deadline { return nil }
            usleep(500)
        }
        // WIFEXITED and friends are macros Swift does not import.
        let signal = status & 0x7F
        let exit = Exit(
            status: signal == 0 ? (status >> 8) & 0xFF : nil, signal: signal == 0 ? nil : signal,
            standardOutput: (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "",
            standardError: (try? String(contentsOf: errorURL, encoding: .utf8)) ?? "")
        self.exit = exit
        return exit
    }

    /// Kills the process with `SIGKILL` and reaps it.
    @discardableResult
    package func kill() -> Exit {
        if let exit { return exit }
        #if canImport(Darwin)
        _ = Darwin.kill(pid, SIGKILL)
        #else
        _ = Glibc.kill(pid, SIGKILL)
        #endif
        return wait(timeout: eventWaitBound)!
    }
}

package struct ProcessTestFailure: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

/// SplitMix64: a seeded generator, so that a failing run's random choices can be replayed from
/// the seed it prints.
package struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    package init(seed: UInt64) { state = seed }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A positive integer from the environment, or `defaultValue`.
package func environmentCount(_ name: String, default defaultValue: Int) -> Int {
    ProcessInfo.processInfo.environment[name].flatMap(Int.init).map { max(1, $0) } ?? defaultValue
}

/// The seed named by the environment variable `name`, or a fresh random one.
package func environmentSeed(_ name: String) -> UInt64 {
    ProcessInfo.processInfo.environment[name].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
}
