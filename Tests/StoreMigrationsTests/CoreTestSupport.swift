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
