import Foundation

/// `--kill-after`: the demo kills itself with `SIGKILL`, as a crash or the system would, with no
/// chance to clean up; run it again on the same directory to see the launch resume.
enum SelfKill {
    /// Kills the process `seconds` from now, saying so first.
    static func schedule(after seconds: Double) {
        Console.line("(this run kills itself with SIGKILL after \(seconds) s; run it again with the same --dir to resume)")
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
            Console.line("\n** SIGKILL after \(seconds) s **")
            kill(getpid(), SIGKILL)
        }
    }
}
