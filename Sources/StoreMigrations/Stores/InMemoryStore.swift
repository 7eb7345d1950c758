import Foundation

/// A store that keeps a value and its managers' records in memory, for tests, previews and
/// benchmarks of the scheduler.
///
/// Each transaction edits a copy of the value; the copy and the records replace the old ones
/// together, so a body that throws leaves both as they were.
///
/// ```swift
/// let store = InMemoryStore<[String: Int]>(["launches": 3])
/// let counters = try coordinator.manager("counters", store: store)
/// counters.register("1.1") { values in values["launches", default: 0] += 1 }
/// ```
public final class InMemoryStore<Value: Sendable>: MigrationStore, @unchecked Sendable {
    // @unchecked: `value`, `records` and `readFailure` are only touched with `lock` held; the
    // rest are constants.
    /// Bodies edit the stored value.
    public typealias Content = Value

    private let lock = NSLock()
    // Touched only with `lock` held, so accesses never overlap: Swift's dynamic exclusivity
    // checks (two a transaction) are left out, as they cost runs of many small steps.
    @exclusivity(unchecked) private var value: Value
    @exclusivity(unchecked) private var records: [String: MigrationRecord]
    private let rebuiltValue: Value?
    /// What ``erase(_:)`` leaves: the value the store was created with.
    private let initialValue: Value
    private let name: String
    /// When set, ``readRecords()`` throws it: stands in for an unreadable store in tests.
    var readFailure: (any Error)?

    /// Creates a store holding `value`, with `records` already kept.
    ///
    /// - Parameters:
    ///   - value: What bodies edit.
    ///   - records: Each manager's record, as if earlier launches had written them.
    ///   - name: How reports and errors name the store.
    ///   - rebuiltValue: The value a rebuild starts from; a store given one is rebuildable, like
    ///     a cache.
    public init(
        _ value: Value,
        records: [String: MigrationRecord] = [:],
        name: String = "in-memory store",
        rebuiltValue: Value? = nil
    ) {
        self.value = value
        initialValue = value
        self.rebuiltValue = rebuiltValue
        self.records = records
        self.name = name
    }

    /// Whether the store was given a value to rebuild from.
    public var isRebuildable: Bool { rebuiltValue != nil }

    public var description: String { name }

    /// The current value.
    public var contents: Value { lock.withLock { value } }

    public func readRecords() throws -> [String: MigrationRecord] {
        try lock.withLock {
            if let readFailure { throw readFailure }
            return records
        }
    }

    public func transaction<T>(
        _ request: TransactionRequest, _ body: (inout [String: MigrationRecord], inout Value) throws -> T
    ) throws -> T {
        try lock.withLock {
            var newValue = value
            guard request.changesRecordsLast else {
                var newRecords = records
                let result = try body(&newRecords, &newValue)
                records = newRecords
                value = newValue
                return result
            }
            // The records are moved out, not copied, so that the step changes them in place; a
            // body that throws has not changed them, so they go back as they are.
            var ownRecords = records
            records = [:]
            #if DEBUG
            let before = ownRecords
            #endif
            defer { records = ownRecords }
            do {
                let result = try body(&ownRecords, &newValue)
                value = newValue
                return result
            } catch {
                #if DEBUG
                assert(ownRecords == before, "a step's body changed records, then threw")
                #endif
                throw error
            }
        }
    }

    public func rebuild(_ content: inout Value) throws {
        guard let rebuiltValue else {
            throw MigrationError.resetNotSupported(manager: "", store: name)
        }
        content = rebuiltValue
    }
}

extension InMemoryStore: ErasableStore {
    /// Forgets every record and puts back the value the store was created with, in one step.
    public func erase(_ request: TransactionRequest) throws {
        lock.withLock {
            records = [:]
            value = initialValue
        }
    }
}
