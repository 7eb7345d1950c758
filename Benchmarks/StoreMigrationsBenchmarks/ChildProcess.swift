import Foundation

/// A child process started with `posix_spawn` and waited for with `waitpid`: this benchmarks
/// executable started again with a hidden subcommand (``ChildCommand``), so that a workload can
/// SIGKILL it mid-step as the system kills an app, or a peer's harness. Not Foundation's
/// `Process`: the parent must know the moment the child ends, and kill it at a deadline, without
/// a monitoring thread of its own taking part in what is timed; and `Process.waitUntilExit()`
/// once missed a harness's exit here, leaving the child a zombie and the benchmark waiting.
enum ChildProcess {
    enum Ending: Equatable {
        /// Exited with this status.
        case exited(Int32)
        /// Still running at the deadline, and SIGKILLed.
        case killed
    }

    static var executable: String {
        #if os(Linux)
        if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return path }
        #endif
        return Bundle.main.executablePath ?? CommandLine.arguments[0]
    }

    /// Runs this executable with `arguments` in a child and waits for it to end, killing it with
    /// SIGKILL if it is still running `deadline` seconds after it was started.
    static func run(_ arguments: [String], killAfter deadline: Double? = nil) throws -> Ending {
        try run(program: executable, arguments: arguments, killAfter: deadline)
    }

    /// Runs `program` with `arguments` in a child and waits for it to end.
    ///
    /// - Parameters:
    ///   - environment: the child's environment; this process's when `nil`.
    ///   - standardOutput: a file the child's standard output replaces; this process's when `nil`.
    ///     A file rather than a pipe: a child that leaves a daemon behind keeps a pipe open.
    ///   - deadline: seconds after the start at which a child still running is SIGKILLed.
    static func run(program: String, arguments: [String], environment: [String: String]? = nil,
                    standardOutput: String? = nil, killAfter deadline: Double? = nil) throws -> Ending {
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { envp?.forEach { free($0) } }
        #if canImport(Darwin)
        var actions: posix_spawn_file_actions_t?
        #else
        var actions = posix_spawn_file_actions_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let standardOutput {
            posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, standardOutput, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        }
        var pid: pid_t = 0
        let start = ContinuousClock.now
        let spawned = argv.withUnsafeBufferPointer { argv in
            if let envp {
                return envp.withUnsafeBufferPointer { posix_spawn(&pid, program, &actions, nil, argv.baseAddress!, $0.baseAddress!) }
            }
            return posix_spawn(&pid, program, &actions, nil, argv.baseAddress!, Self.environment)
        }
        guard spawned == 0 else { throw RawSQLiteError(message: "posix_spawn \(program): \(String(cString: strerror(spawned)))") }
        let end = deadline.map { start + .nanoseconds(Int64($0 * 1e9)) }
        var status: Int32 = 0
        while true {
            // A 1 ms poll: steps of seconds need no finer timing, and one thread that mostly
            // sleeps disturbs the child less than a blocked `waitpid` plus a timer thread.
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid { break }
            if reaped < 0, errno != EINTR { throw RawSQLiteError(message: "waitpid: \(String(cString: strerror(errno)))") }
            if let end, ContinuousClock.now >= end {
                kill(pid, SIGKILL)
                while waitpid(pid, &status, 0) < 0, errno == EINTR {}
                return .killed
            }
            usleep(1_000)
        }
        // WIFEXITED and WEXITSTATUS are macros, which Swift does not import.
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .exited(128 + signal)
    }

    private static var environment: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? {
        #if canImport(Darwin)
        return _NSGetEnviron().pointee
        #else
        return environ
        #endif
    }
}
