import Foundation
import StoreMigrations

/// One line that shows every store's state during a run, rewritten in place on a terminal;
/// elsewhere (a log, a pipe) a line per finished, failed or skipped step, flushed as it happens.
/// Either way each step is listed once: the report printed after the run lists the steps only
/// on a terminal, where the live line did not.
final class LiveProgress: @unchecked Sendable {
    // @unchecked: `managers`, `states` and `lastRender` are only touched with `lock` held (the
    // observer is called from the scheduler's threads); the rest are constants.
    private let lock = NSLock()
    private var managers: [String]
    private var states: [String: String] = [:]
    private var lastRender = ContinuousClock.now
    let isTerminal = isatty(STDOUT_FILENO) == 1

    init(managers: [String]) {
        self.managers = managers
        for manager in managers { states[manager] = "waiting" }
    }

    func handle(_ event: MigrationEvent) {
        lock.withLock {
            switch event {
            case .planned(let plan):
                for manager in plan.managers where manager.pending.isEmpty { states[manager.name] = "up to date" }
            case .started(let step):
                states[step.manager] = "\(step.id.description.dropFirst(step.manager.count + 1)) running"
            case .progress(let step, let fraction):
                states[step.manager] = "\(step.id.description.dropFirst(step.manager.count + 1)) \(Int(fraction * 100))%"
            case .finished(let step, let duration):
                states[step.manager] = "\(step.version.map { "at \($0)" } ?? "done") ✓"
                if !isTerminal { Console.line("  \(step.title) applied in \(String(format: "%.1f ms", duration * 1000))") }
            case .failed(let step, let error):
                states[step.manager] = "\(step.id) FAILED"
                if !isTerminal { Console.line("  \(step.title) FAILED: \(error)") }
            case .skipped(let step, _):
                states[step.manager] = "\(step.id) skipped"
                if !isTerminal { Console.line("  \(step.title) skipped") }
            case .waiting(let step, let wait):
                states[step.manager] = "\(step.id.description.dropFirst(step.manager.count + 1)) waiting"
                if !isTerminal { Console.line("  \(step.title) \(wait)") }
            case .alreadyApplied(let step, _):
                states[step.manager] = "\(step.version.map { "at \($0)" } ?? "done") ✓"
                if !isTerminal { Console.line("  \(step.title) already applied by another process") }
            case .batchCommitted(let step, let progress):
                let percent = progress.fractionDone.map { " \(Int($0 * 100))%" } ?? ""
                states[step.manager] = "\(step.id.description.dropFirst(step.manager.count + 1))\(percent)"
                if !isTerminal {
                    Console.line("  \(step.title) batch committed: \(progress.done) of \(progress.total.map(String.init) ?? "?") rows, "
                        + "next after \(progress.cursor)")
                }
            case .postponed(let step, let progress):
                states[step.manager] = "\(step.id.description.dropFirst(step.manager.count + 1)) later"
                if !isTerminal { Console.line("  \(step.title) \(progress.map { "stopped at \($0)" } ?? "deferred")") }
            }
            render(force: { if case .progress = event { return false } else { return true } }())
        }
    }

    /// Ends the line on a terminal.
    func finish() {
        lock.withLock {
            render(force: true)
            if isTerminal { Console.line() }
        }
    }

    /// Call with `lock` held. Progress events can arrive by the thousand: at most 20 frames a
    /// second.
    private func render(force: Bool) {
        guard isTerminal else { return }
        let now = ContinuousClock.now
        guard force || now - lastRender > .milliseconds(50) else { return }
        lastRender = now
        let line = "  " + managers.map { "\($0): \(states[$0] ?? "")" }.joined(separator: " │ ")
        Console.rewrite("\r\u{1B}[2K" + Self.fitted(line, columns: Self.terminalColumns()))
    }

    /// `line` cut to one column less than the terminal's width, ending in "…" when cut. A line
    /// that wraps leaves its first row behind at each redraw, since `\r` goes back to the start
    /// of the last row only; and a line of exactly the width wraps at once on some terminals.
    /// Every character of the live line takes one column.
    static func fitted(_ line: String, columns: Int) -> String {
        let room = max(columns - 1, 1)
        guard line.count > room else { return line }
        return String(line.prefix(room - 1)) + "…"
    }

    /// The width of the terminal standard output goes to, read at each frame since a window may
    /// be resized: its window size, else `COLUMNS`, else 80.
    static func terminalColumns() -> Int {
        var size = winsize()
        if ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        if let columns = ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init), columns > 0 { return columns }
        return 80
    }
}
