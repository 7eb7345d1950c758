import Foundation

/// A step waiting for its store: another process (an app extension, a second replica) or another
/// connection holds the lock the step needs. Reported by ``MigrationEvent/waiting(_:_:)`` as
/// soon as the step starts waiting, so that a launch that seems stuck says why.
///
/// ```swift
/// coordinator.observer = { event in
///     if case let .waiting(step, wait) = event { log("\(step.id): \(wait)") }
///     // library@2.0: waiting for the database's write lock on library.sqlite, held by process 4127
/// }
/// ```
public struct StoreWait: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The store, as it describes itself.
    public var store: String
    /// What the step waits for: "the database's write lock on …", "the lock file …".
    public var lock: String
    /// The process holding it, where the system tells (Linux's `/proc/locks` for files,
    /// `pg_locks` for PostgreSQL); `nil` otherwise.
    public var holderProcessID: Int32?

    /// Describes a wait; stores create these for ``TransactionRequest/waiting(_:)``.
    public init(store: String, lock: String, holderProcessID: Int32? = nil) {
        self.store = store
        self.lock = lock
        self.holderProcessID = holderProcessID
    }

    public var description: String {
        "\(store): waiting for \(lock), held by " + (holderProcessID.map { "process \($0)" } ?? "another process or connection")
    }
}
