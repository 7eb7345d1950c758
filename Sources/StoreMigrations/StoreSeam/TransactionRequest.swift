import Foundation

/// What the coordinator tells a store about the transaction it asks for: the migration it runs,
/// whether in a transaction, with which options, and where to report a wait. Given to
/// ``MigrationStore/transaction(_:_:)``; a store that never waits, or does not say, can ignore
/// it.
///
/// ```swift
/// func transaction<T>(
///     _ request: TransactionRequest,
///     _ body: (inout [String: MigrationRecord], inout Content) throws -> T
/// ) throws -> T {
///     if !lock.tryLock() {
///         request.waiting(StoreWait(store: description, lock: "the store's lock"))
///         lock.lock()
///     }
///     defer { lock.unlock() }
///     …
/// }
/// ```
public struct TransactionRequest: Sendable {
    /// The migration the transaction runs; `nil` when it changes records only (a baseline, a
    /// reset, an app-version hook).
    public let migration: MigrationReference?
    /// Whether the body runs inside the store's transaction (``TransactionMode/transactional``,
    /// always, unless the store ``MigrationStore/runsStepsOutsideTransactions``).
    public let mode: TransactionMode
    /// Whether the transaction runs one batch of a resumable migration
    /// (``MigrationManager/registerResumable(_:dependsOn:batchSize:deferred:options:_:)``): a store that
    /// can tell refuses schema changes in it, since batches must leave the schema alone.
    public let isBatch: Bool
    /// The options the migration was registered with (``MigrationOption``): the store reads
    /// those it understands.
    public let options: MigrationOptions
    // The run and step rather than a closure: a closure capturing the step would be allocated
    // for every step of every run.
    private let run: any MigrationRunControl
    private let step: Int
    /// Whether the body changes records only after its last call that can throw, so that a body
    /// that throws has left them untouched: true of every step the step executor runs, which
    /// checks, runs the migration, then records it. A store that rolls back by keeping a copy
    /// (``InMemoryStore``) keeps none of the records then: a copy of a record copies its whole
    /// applied set, on every step.
    let changesRecordsLast: Bool

    /// A request for `migration`, reporting waits to `onWait`: for tests of a custom store.
    public init(
        migration: MigrationReference? = nil, mode: TransactionMode = .transactional, isBatch: Bool = false,
        options: MigrationOptions = MigrationOptions(), onWait: @escaping @Sendable (StoreWait) -> Void = { _ in }
    ) {
        self.init(
            migration: migration, source: StepSource(run: StandaloneRun(onWait: onWait), step: 0), mode: mode,
            isBatch: isBatch, options: options, changesRecordsLast: false)
    }

    init(
        migration: MigrationReference?, source: StepSource, mode: TransactionMode = .transactional, isBatch: Bool = false,
        options: MigrationOptions = MigrationOptions(), changesRecordsLast: Bool = true
    ) {
        self.changesRecordsLast = changesRecordsLast
        self.migration = migration
        self.mode = mode
        self.isBatch = isBatch
        self.options = options
        self.run = source.run
        self.step = source.step
    }

    /// Call when the transaction starts waiting for a lock someone else holds, once a wait,
    /// before waiting: the coordinator reports it as ``MigrationEvent/waiting(_:_:)``.
    public func waiting(_ wait: StoreWait) {
        run.reportWait(wait, ofStep: step)
    }
}
