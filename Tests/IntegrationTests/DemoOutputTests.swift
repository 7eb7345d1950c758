import Foundation
import Testing
import TestSupport

/// What `swift run demo` prints: its usage, its live line on a narrow terminal, and a
/// `--kill-after` that comes after the end of the run.
@Suite struct DemoOutputTests {
    let folder: TemporaryFolder
    let demo: URL

    init() throws {
        folder = try TemporaryFolder()
        demo = try DemoResumeTests.findDemo()
    }

    static let usage = """
        usage: demo [--dir PATH] [--rows N] [--kill-after SECONDS]
          --dir PATH            where the stores are: an empty or new directory gets the 1.0 stores;
                                one holding them (a run killed part-way) resumes the launch of 2.0
                                (default: a new temporary directory)
          --rows N              notes in the database (default 20000)
          --kill-after SECONDS  kill the demo with SIGKILL after that long; run it again on the
                                same --dir to see the launch resume

        """

    func run(_ executable: URL, _ arguments: [String]) throws -> ChildProcess.Exit {
        let child = try ChildProcess(executable: executable, arguments: arguments, logs: folder.url)
        guard let exit = child.wait(timeout: eventWaitBound) else {
            child.kill()
            throw ProcessTestFailure("\(executable.lastPathComponent) \(arguments.joined(separator: " ")) ran past \(Int(eventWaitBound)) s")
        }
        return exit
    }

    @Test func helpGoesToStandardOutputAndSucceeds() throws {
        let exit = try run(demo, ["--help"])
        #expect(exit.status == 0, "\(exit)")
        #expect(exit.standardOutput == Self.usage)
        #expect(exit.standardError == "")
    }

    @Test func aWrongArgumentIsAUsageErrorOnStandardError() throws {
        let exit = try run(demo, ["--rows", "many"])
        #expect(exit.status == 2, "\(exit)")
        #expect(exit.standardOutput == "")
        #expect(exit.standardError == "--rows needs a positive number\n" + Self.usage)
    }

    @Test func aKillAfterPastTheEndSaysSoAndKillsNothing() throws {
        let exit = try run(demo, ["--dir", folder.file("stores").path, "--rows", "300", "--kill-after", "600"])
        #expect(exit.status == 0, "\(exit)")
        let lines = exit.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.first == "(this run kills itself with SIGKILL after 600.0 s; run it again with the same --dir to resume)")
        let last = try #require(lines.last)
        #expect(last.hasPrefix("(--kill-after 600.0 s came after the end: the demo finished in "), "\(last)")
        #expect(last.hasSuffix(" s and nothing was killed; give a shorter time to kill it mid-run)"), "\(last)")
        #expect(!exit.standardOutput.contains("SIGKILL after 600.0 s **"))
    }

    /// A directory a previous run migrated to the end is launched again, not "resumed".
    @Test func aFinishedDirectoryIsLaunchedAgainNotResumed() throws {
        let stores = folder.file("finished").path
        let first = try run(demo, ["--dir", stores, "--rows", "300"])
        #expect(first.status == 0, "\(first)")
        let again = try run(demo, ["--dir", stores, "--rows", "300"])
        #expect(again.status == 0, "\(again)")
        #expect(again.standardOutput.contains("== Launching 2.0 again in \(stores)\n"), "\(again.standardOutput)")
        #expect(!again.standardOutput.contains("Resuming"))
    }

    #if os(Linux)
    /// The frames of the live line a demo run drew on a terminal (util-linux `script` gives it
    /// one), after `shell` set the terminal up: each redraw goes back with `\r` and clears the row.
    func liveFrames(_ shell: String) throws -> [String] {
        let command = "\(shell) \(demo.path) --dir \(folder.file("stores").path) --rows 300"
        let exit = try run(URL(fileURLWithPath: "/usr/bin/script"), ["-qefc", command, "/dev/null"])
        try #require(exit.succeeded, "\(exit)")
        let output = exit.standardOutput
        let running = try #require(output.range(of: "== Running it"), "\(exit)")
        let end = try #require(output.range(of: "Migration to app version", range: running.upperBound..<output.endIndex))
        return output[running.upperBound..<end.lowerBound]
            .components(separatedBy: CharacterSet(charactersIn: "\r\n"))
            .map { $0.replacingOccurrences(of: "\u{1B}[2K", with: "") }
            .filter { !$0.isEmpty }
    }

    /// On a 40-column terminal a frame of 40 or more characters would wrap, and the next
    /// redraw, going back to the start of its last row only, would leave the first row behind.
    @Test func theLiveLineFitsA40ColumnTerminal() throws {
        let frames = try liveFrames("stty cols 40 rows 24; exec")
        #expect(frames.count >= 2, "\(frames)")
        for frame in frames { #expect(frame.count <= 39, "\(frame)") }
        #expect(frames.first == "  preferences: waiting │ library: wait…")
        #expect(frames.last == "  preferences: at 2.0 ✓ │ library: at …")
    }

    /// Without a window size (output to a pseudo-terminal nobody sized), `COLUMNS` says it.
    @Test func theLiveLineFollowsColumnsWithoutAWindowSize() throws {
        let frames = try liveFrames("stty cols 0 rows 0; COLUMNS=30 exec")
        for frame in frames { #expect(frame.count <= 29, "\(frame)") }
        #expect(frames.last == "  preferences: at 2.0 ✓ │ li…")
    }
    #endif
}
