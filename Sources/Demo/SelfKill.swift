import Foundation

/// `--kill-after`: the demo kills itself with `SIGKILL`, as a crash or the system would, with no
/// chance to clean up; run it again on the same directory to see the launch resume.
enum SelfKill {
    private enum State { case idle, scheduled, killing, cancelled }

    // nonisolated(unsafe): only read and written with `lock` held.
    nonisolated(unsafe) private static var state = State.idle
    private static let lock = NSLock()

    /// Kills the process `seconds` from now, saying so first.
    static func schedule(after seconds: Double) {
        Console.line("(this run kills itself with SIGKILL after \(seconds) s; run it again with the same --dir to resume)")
        lock.withLock { state = .scheduled }
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
            // A run that has ended said so already: the kill would only cut its last words.
            guard lock.withLock({ () -> Bool in
                guard state == .scheduled else { return false }
                state = .killing
                return true
            }) else { return }
            Console.line("\n** SIGKILL after \(seconds) s **")
            kill(getpid(), SIGKILL)
        }
    }

    /// Calls off the kill unless it is under way; `true` when one was scheduled and is now off.
    static func cancel() -> Bool {
        lock.withLock {
            guard state == .scheduled else { return false }
            state = .cancelled
            return true
        }
    }
}
