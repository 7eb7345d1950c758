import Foundation
import Testing
@testable import CrashRunner
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// A step that finds its store held by another process says so at once, with the holder's pid,
/// and goes on when the holder is gone.
@Suite struct WaitingEventTests {
    let runner: CrashRunnerExecutable
    let folder: TemporaryFolder
    let logs: URL

    init() throws {
        runner = try CrashRunnerExecutable()
        folder = try TemporaryFolder()
        logs = folder.file("logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
    }

    @Test(arguments: ["prefs", "library", "thumbnails"])
    func aStepWaitingForAnotherProcessReportsItsPidBeforeWaiting(store kind: String) throws {
        let directory = folder.file("stores")
        let holding = folder.file("holding")
        let holder = try runner.start(["hold", directory.path, kind, holding.path], logs: logs)
        defer { _ = holder.kill() }
        let holds = waitUntil { FileManager.default.fileExists(atPath: holding.path) || holder.wait(timeout: 0) != nil }
        try #require(holds && holder.wait(timeout: 0) == nil, "the holder ended early or never took the lock")

        let scenario = Scenario(directory: directory)
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        switch kind {
        case "prefs": try coordinator.manager("probe", store: PreferencesStore(url: scenario.preferencesURL)).register("1.0") { try $0.set(true, for: "probe") }
        case "library": try coordinator.manager("probe", store: SQLiteStore(url: scenario.databaseURL)).register("1.0") { db in try db.execute("CREATE TABLE probe(x)") }
        default: try coordinator.manager("probe", store: CacheStore(directory: scenario.cacheURL)).register("1.0") { _ in }
        }
        let events = EventLog()
        let waiting = DispatchSemaphore(value: 0)
        coordinator.observer = { event in
            events.append(describe(event))
            if case .waiting = event { waiting.signal() }
        }
        let report = Locked<Result<MigrationReport, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            report.value = Result { try coordinator.run() }
            done.signal()
        }
        try #require(waiting.waitForEvent(), "no waiting event: \(events.all)")
        #expect(done.wait(timeout: .now() + 0.2) == .timedOut, "the step must still wait while the holder lives")
        #expect(holder.kill().signal == SIGKILL)
        try #require(done.waitForEvent(), "the step never went on after the holder died")

        let lock: String
        switch kind {
        case "prefs": lock = "the lock file \(scenario.preferencesURL.path).lock"
        case "library": lock = "the database's write lock on \(Scenario.databaseName)"
        default: lock = "the lock file \(scenario.cacheURL.path)\(CacheStore.lockSuffix)"
        }
        let storeDescription = try #require(try report.value?.get().managers.first?.store)
        #expect(events.all == [
            "planned 1",
            "started probe@1.0",
            "waiting probe@1.0: \(storeDescription): waiting for \(lock), held by process \(holder.pid)",
            "finished probe@1.0",
        ])
    }

    @Test func theEventReadsAsOneLogLine() {
        let step = PlannedStep(manager: "library", action: .migrate, version: "2.0", previousAppVersion: nil, dependencies: [], wave: 0)
        let wait = StoreWait(store: "SQLite database library.sqlite", lock: "the database's write lock on library.sqlite", holderProcessID: 4127)
        #expect("\(MigrationEvent.waiting(step, wait))"
            == "library@2.0: SQLite database library.sqlite: waiting for the database's write lock on library.sqlite, held by process 4127")
        #expect("\(MigrationEvent.skipped(step, because: PlannedStep.ID(manager: "library", action: .migrate, version: "1.1")))"
            == "library@2.0: skipped because library@1.1 failed")
        #expect(StoreWait(store: "s", lock: "l").description == "s: waiting for l, held by another process or connection")
    }
}
