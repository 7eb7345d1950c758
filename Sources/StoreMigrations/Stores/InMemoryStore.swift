import Foundation

/// A store that keeps a value and its managers' levels in memory, for tests, previews and
/// benchmarks of the scheduler.
///
/// Each migration edits a copy of the value; the copy and the new level replace the old ones
/// together, so a body that throws leaves both as they were.
///
/// ```swift
/// let store = InMemoryStore<[String: Int]>(["launches": 3])
/// let counters = try coordinator.manager("counters", store: store)
/// counters.register("1.1") { values in values["launches", default: 0] += 1 }
/// ```
public final class InMemoryStore<Value: Sendable>: MigrationStore, @unchecked Sendable {
    /// Bodies edit the stored value.
    public typealias Content = Value

    private let lock = NSLock()
    private var value: Value
    private var states: [String: ManagerState]
    private let rebuiltValue: Value?
    private let name: String
    /// When set, ``readStates()`` throws it: stands in for an unreadable store in tests.
    var readFailure: (any Error)?

    /// Creates a store holding `value`, with `states` already recorded.
    ///
    /// - Parameter rebuiltValue: The value a rebuild starts from; a store given one is
    ///   rebuildable, like a cache.
    public init(
        _ value: Value,
        states: [String: ManagerState] = [:],
        name: String = "in-memory store",
        rebuiltValue: Value? = nil
    ) {
        self.value = value
        self.rebuiltValue = rebuiltValue
        self.states = states
        self.name = name
    }

    /// Whether the store was given a value to rebuild from.
    public var isRebuildable: Bool { rebuiltValue != nil }

    public var description: String { name }

    /// The current value.
    public var contents: Value { lock.withLock { value } }

    /// The recorded states, by manager name.
    public var recordedStates: [String: ManagerState] { lock.withLock { states } }

    public func readStates() throws -> [String: ManagerState] {
        try lock.withLock {
            if let readFailure { throw readFailure }
            return states
        }
    }

    public func apply(_ migration: StoreMigration<Value>) throws -> StoreApplyOutcome {
        try lock.withLock {
            if let level = states[migration.manager]?.level, level >= migration.version {
                return .alreadyApplied(level: level)
            }
            var copy = value
            try migration.run(on: &copy)
            value = copy
            states[migration.manager, default: ManagerState()].level = migration.version
            return .applied
        }
    }

    public func updateState(of manager: String, _ update: (inout ManagerState) -> Void) throws {
        lock.withLock {
            var state = states[manager] ?? ManagerState()
            update(&state)
            states[manager] = state
        }
    }

    public func rebuild(resetting manager: String) throws {
        guard let rebuiltValue else {
            throw MigrationError.resetNotSupported(manager: manager, store: name)
        }
        lock.withLock {
            value = rebuiltValue
            states[manager] = nil
        }
    }
}
