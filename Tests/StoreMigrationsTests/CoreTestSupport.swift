import Foundation
@testable import StoreMigrations

/// A thread-safe list of what happened, in order.
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [String] = []

    func append(_ entry: String) { lock.withLock { entries.append(entry) } }
    var all: [String] { lock.withLock { entries } }
}

/// Registers `versions` on `manager`, each appending "name@version" to the store's value and to `log`.
func registerLogging(
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

struct TestFailure: Error, CustomStringConvertible, Equatable {
    let message: String
    var description: String { message }
}

/// One line per event, for comparing a run's events with the expected sequence.
func describe(_ event: MigrationEvent) -> String {
    switch event {
    case .planned(let plan): return "planned \(plan.steps.count)"
    case .started(let step): return "started \(step.id)"
    case .progress(let step, let fraction): return "progress \(step.id) \(fraction)"
    case .finished(let step, _): return "finished \(step.id)"
    case .failed(let step, let error): return "failed \(step.id): \(error)"
    case .skipped(let step, let because): return "skipped \(step.id) because \(because?.description ?? "cancelled")"
    }
}
