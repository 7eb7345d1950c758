import Foundation

/// This benchmarks executable started again as a child process, with a hidden subcommand
/// (``ChildCommand``), so that a workload can SIGKILL it mid-step as the system kills an app.
/// `posix_spawn` and `waitpid` rather than Foundation's `Process`: the parent must know the
/// moment the child ends, and kill it at a deadline, without a monitoring thread of its own
/// taking part in what is timed.
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

    /// Runs `arguments` in a child and waits for it to end, killing it with SIGKILL if it is
    /// still running `deadline` seconds after it was started.
    static func run(_ arguments: [String], killAfter deadline: Double? = nil) throws -> Ending {
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let start = ContinuousClock.now
        let spawned = argv.withUnsafeBufferPointer { posix_spawn(&pid, executable, nil, nil, $0.baseAddress!, environment) }
        guard spawned == 0 else { throw RawSQLiteError(message: "posix_spawn \(executable): \(String(cString: strerror(spawned)))") }
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
