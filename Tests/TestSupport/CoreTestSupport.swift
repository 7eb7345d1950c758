import Dispatch
import Foundation
import Testing
import StoreMigrations

/// A thread-safe list of what happened, in order.
package final class EventLog: @unchecked Sendable {
    package init() {}
    private let lock = NSLock()
    private var entries: [String] = []

    package func append(_ entry: String) { lock.withLock { entries.append(entry) } }
    package var all: [String] { lock.withLock { entries } }
}

/// Registers `versions` on `manager`, each appending "name@version" to the store's value and to `log`.
package func registerLogging(
    _ versions: [Version], on manager: MigrationManager<InMemoryStore<[String]>>, log: EventLog? = nil,
    dependsOn: [Version: [MigrationReference]] = [:]
) {
    for version in versions {
        let entry = "\(manager.name)@\(version)"
        manager.register(version, dependsOn: dependsOn[version] ?? []) { applied in
            applied.append(entry)
            log?.append(entry)
        }
    }
}

package struct TestFailure: Error, CustomStringConvertible, Equatable {
    package init(message: String) { self.message = message }
    package let message: String
    package var description: String { message }
}

/// One line per event, for comparing a run's events with the expected sequence.
package func describe(_ event: MigrationEvent) -> String {
    switch event {
    case .planned(let plan): return "planned \(plan.steps.count)"
    case .started(let step): return "started \(step.id)"
    case .progress(let step, let fraction): return "progress \(step.id) \(fraction)"
    case .finished(let step, _): return "finished \(step.id)"
    case .failed(let step, let error): return "failed \(step.id): \(error)"
    case .skipped(let step, let because): return "skipped \(step.id) because \(because?.description ?? "cancelled")"
    case .waiting(let step, let wait): return "waiting \(step.id): \(wait)"
    case .alreadyApplied(let step, _): return "alreadyApplied \(step.id)"
    case .batchCommitted(let step, let progress): return "batch \(step.id) \(progress.done)"
    case .postponed(let step, let progress): return "postponed \(step.id)\(progress.map { " \($0.done)" } ?? "")"
    }
}

/// The identifier of the step that applies `manager`'s migration `version`.
package func stepID(_ manager: String, _ version: Version) -> PlannedStep.ID {
    .init(manager: manager, action: .migrate, version: version)
}

/// Runs `coordinator` and returns the report whether the run succeeded or not.
package func runReport(of coordinator: MigrationCoordinator) throws -> MigrationReport {
    do {
        return try coordinator.run()
    } catch let error as MigrationRunError {
        return error.report
    }
}

/// A run's result, and a flag, set on one thread and read on another.
package final class ResultBox: @unchecked Sendable {
    package init() {}
    private let lock = NSLock()
    private var result: Result<MigrationReport, any Error>?
    private var _flag = false
    package func set(_ result: Result<MigrationReport, any Error>) { lock.withLock { self.result = result } }
    package var flag: Bool {
        get { lock.withLock { _flag } }
        set { lock.withLock { _flag = newValue } }
    }
    package var error: (any Error)? { lock.withLock { if case .failure(let error) = result { return error } else { return nil } } }
    package var report: MigrationReport? { lock.withLock { try? result?.get() } }
}

/// Hands the run handle returned by `run(queue:completion:)` to an observer running meanwhile.
package final class HandleBox: @unchecked Sendable {
    package init() {}
    private let lock = NSLock()
    private let published = DispatchSemaphore(value: 0)
    private var handle: MigrationRunHandle?
    package func set(_ handle: MigrationRunHandle) {
        lock.withLock { self.handle = handle }
        published.signal()
    }
    package func get() -> MigrationRunHandle? {
        if let handle = lock.withLock({ handle }) { return handle }
        guard published.waitForEvent() else { return nil }
        published.signal()
        return lock.withLock { handle }
    }
}

/// Runs through `run(queue:completion:)`, handing the handle to `box` for the observer.
package func runWithHandle(_ coordinator: MigrationCoordinator, box: HandleBox) throws -> Result<MigrationReport, any Error> {
    let done = DispatchSemaphore(value: 0)
    let result = ResultBox()
    box.set(coordinator.run(queue: DispatchQueue(label: "runWithHandle.completion")) { outcome in
        result.set(outcome)
        done.signal()
    })
    guard done.waitForEvent() else { throw TestFailure(message: "the run never completed") }
    if let report = result.report { return .success(report) }
    return .failure(try #require(result.error))
}

/// A value read and written from several threads.
package final class Locked<Value>: @unchecked Sendable {
    // @unchecked: `stored` is only touched with `lock` held.
    private let lock = NSLock()
    private var stored: Value
    package init(_ value: Value) { stored = value }
    package var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
