import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

/// `UserDefaultsStore`'s reads while steps of the same process rewrite the suite: on Linux,
/// Foundation rewrites the domain's file in place, so a read must not parse it half-written.
@Suite struct UserDefaultsConcurrencyTests {
    /// What a reader saw, across threads.
    private final class Observations: @unchecked Sendable {
        // `lock` guards every property.
        private let lock = NSLock()
        private var failures: [String] = []
        private var backwards: [String] = []
        private var reads = 0
        private var done = false

        var isDone: Bool { lock.withLock { done } }
        func finish() { lock.withLock { done = true } }
        func failed(_ error: any Error) { lock.withLock { failures.append("\(error)") } }
        func wentBack(_ line: String) { lock.withLock { backwards.append(line) } }
        func read() { lock.withLock { reads += 1 } }
        var summary: (failures: [String], backwards: [String], reads: Int) { lock.withLock { (failures, backwards, reads) } }
    }

    @Test func readsDuringAStepLoopNeverFailAndNeverGoBack() throws {
        let folder = try TemporaryFolder()
        let suite = folder.file("com.example.concurrent").path
        let steps = 150
        let coordinator = MigrationCoordinator(appVersion: Version(steps))
        let settings = try coordinator.manager("settings", store: UserDefaultsStore(suiteName: suite))
        for step in 1...steps {
            settings.register(Version(step)) { prefs in
                try prefs.set(step, for: "counter")
                // Enough data that a rewrite of the file takes more than one write call.
                try prefs.set(String(repeating: "x", count: 4_096), for: ["padding", "\(step % 8)"])
            }
        }

        let observations = Observations()
        let readerEnded = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            // Another store object for the suite, as another part of the app would have.
            let reader = UserDefaultsStore(suiteName: suite)
            var lastLevel = Version(0)
            var lastCounter = 0
            while !observations.isDone {
                do {
                    let level = try reader.readRecords()["settings"]?.level ?? Version(0)
                    let counter = try reader.read().int("counter") ?? 0
                    if level < lastLevel { observations.wentBack("level \(lastLevel) then \(level)") }
                    if counter < lastCounter { observations.wentBack("counter \(lastCounter) then \(counter)") }
                    lastLevel = max(lastLevel, level)
                    lastCounter = max(lastCounter, counter)
                    observations.read()
                } catch {
                    observations.failed(error)
                }
            }
            readerEnded.signal()
        }
        defer { observations.finish() }

        let report = try coordinator.run()
        observations.finish()
        #expect(readerEnded.wait(timeout: .now() + 120) == .success)
        #expect(report.steps.count == steps)
        let summary = observations.summary
        #expect(summary.reads > 0)
        #expect(summary.failures == [], "\(summary.failures.count) of \(summary.reads + summary.failures.count) reads failed")
        #expect(summary.backwards == [])
        #expect(try UserDefaultsStore(suiteName: suite).readRecords()["settings"]?.level == Version(steps))
        #expect(try UserDefaultsStore(suiteName: suite).read().int("counter") == steps)
    }
}
