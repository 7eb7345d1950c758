import Foundation

/// What a migration body can see of its run: which step it is, how to report progress, and
/// whether the run was cancelled.
///
/// Bodies that loop over much data report their progress and stop early when cancelled:
///
/// ```swift
/// library.register("2.0") { db, context in
///     for (index, batch) in batches.enumerated() {
///         try context.checkCancellation()   // throws: the store rolls the step back
///         try update(batch, in: db)
///         context.reportProgress(completed: index + 1, of: batches.count)
///     }
/// }
/// ```
public final class MigrationContext: Sendable {
    /// The name of the manager the migration belongs to.
    public let manager: String
    /// The migration's version.
    public let version: Version
    /// The manager's level when the step started, read under the store's lock: `nil` on a
    /// first launch (or after a reset), else the highest version applied or baselined. A body
    /// that converts data in several shapes can tell which one it finds:
    ///
    /// ```swift
    /// prefs.register("3.0") { prefs, context in
    ///     if let level = context.levelBefore, level < "2.0" { try convertFromVersion1(&prefs) }
    ///     try convertFromVersion2(&prefs)
    /// }
    /// ```
    ///
    /// A late migration (registered below a level already reached) sees that higher level.
    public let levelBefore: Version?
    private let run: any MigrationRunControl
    private let step: Int

    init(manager: String, version: Version, levelBefore: Version?, run: any MigrationRunControl, step: Int) {
        self.manager = manager
        self.version = version
        self.levelBefore = levelBefore
        self.run = run
        self.step = step
    }

    /// A context for running a store's migration outside a coordinator, e.g. in a store's tests.
    public convenience init(manager: String, version: Version, levelBefore: Version? = nil) {
        self.init(manager: manager, version: version, levelBefore: levelBefore, run: StandaloneRun(), step: 0)
    }

    static let progressUnits: Int64 = 1_000

    static func units(_ fraction: Double) -> Int64 {
        Int64((fraction * Double(progressUnits)).rounded())
    }

    /// The step's progress, a child of the run's progress; its total is 1,000 units. Advance it
    /// with ``reportProgress(_:)``, which is safe to call from any thread. Made on first use, so
    /// that steps which never report cost the run nothing.
    public var progress: Progress { run.progress(ofStep: step) }

    /// Whether the run was cancelled. In-flight steps may finish; throwing rolls them back.
    public var isCancelled: Bool { run.isCancelled }

    /// Throws `CancellationError` if the run was cancelled.
    public func checkCancellation() throws {
        if isCancelled { throw CancellationError() }
    }

    /// Reports that `fraction` (0...1) of the step is done.
    public func reportProgress(_ fraction: Double) {
        run.reportProgress(ofStep: step, fraction: min(max(fraction, 0), 1))
    }

    /// Adds `text` to the step's line of the run's report (``MigrationReport/Step/notes``): what
    /// the body found worth a look without failing the step, such as data it expected and did
    /// not find.
    public func note(_ text: String) {
        run.addNote(text, ofStep: step)
    }

    /// Reports that `completed` of `total` units of work are done.
    public func reportProgress(completed: Int, of total: Int) {
        reportProgress(total > 0 ? Double(completed) / Double(total) : 1)
    }
}

/// What a ``MigrationContext`` needs from the run its step belongs to.
package protocol MigrationRunControl: AnyObject, Sendable {
    var isCancelled: Bool { get }
    func progress(ofStep step: Int) -> Progress
    func reportProgress(ofStep step: Int, fraction: Double)
    /// Tells the run's observer that `step` waits for its store.
    func reportWait(_ wait: StoreWait, ofStep step: Int)
    /// Keeps `note` for the report's line of `step`.
    func addNote(_ note: String, ofStep step: Int)
    /// Tells the run's observer that a batch of the resumable `step` committed.
    func reportBatch(_ progress: StepProgress, ofStep step: Int)
    /// The app version the run migrates to; `nil` outside a coordinator's run.
    var appVersion: Version? { get }
    /// Asked between two batches of a resumable step: whether to stop there, the progress
    /// committed, because the run was cancelled or its launch budget is spent. Returns only once
    /// the run is not paused.
    func shouldStopBetweenBatches() -> Bool
}

extension MigrationRunControl {
    func reportWait(_ wait: StoreWait, ofStep step: Int) {}
    func addNote(_ note: String, ofStep step: Int) {}
    package func reportBatch(_ progress: StepProgress, ofStep step: Int) {}
    package func shouldStopBetweenBatches() -> Bool { isCancelled }
    package var appVersion: Version? { nil }
}

/// The run of a context or a transaction made outside a coordinator: never cancelled, with a
/// progress of its own, and waits reported to `onWait` if given.
final class StandaloneRun: MigrationRunControl {
    private let stepProgress = Progress(totalUnitCount: MigrationContext.progressUnits)
    private let lock = NSLock()
    private let onWait: (@Sendable (StoreWait) -> Void)?

    init(onWait: (@Sendable (StoreWait) -> Void)? = nil) {
        self.onWait = onWait
    }

    func reportWait(_ wait: StoreWait, ofStep step: Int) {
        onWait?(wait)
    }

    var isCancelled: Bool { false }

    func progress(ofStep step: Int) -> Progress { stepProgress }

    func reportProgress(ofStep step: Int, fraction: Double) {
        lock.withLock { stepProgress.completedUnitCount = MigrationContext.units(fraction) }
    }
}

/// Content that keeps the context of the step running on it, so that its own long operations
/// (a SQLite ``Database``'s row transforms) report progress and notice cancellation without the
/// body passing the context along. The coordinator sets it for the length of the body.
package protocol MigrationContextCarrier: AnyObject {
    var context: MigrationContext? { get set }
}
