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
    /// The step's progress, a child of the run's progress; its total is 1,000 units.
    public let progress: Progress
    private let isCancelledCheck: @Sendable () -> Bool
    private let progressHandler: @Sendable (Double) -> Void

    init(
        manager: String,
        version: Version,
        progress: Progress,
        isCancelled: @escaping @Sendable () -> Bool,
        onProgress: @escaping @Sendable (Double) -> Void
    ) {
        self.manager = manager
        self.version = version
        self.progress = progress
        self.isCancelledCheck = isCancelled
        self.progressHandler = onProgress
    }

    /// A context for running a store's migration outside a coordinator, e.g. in a store's tests.
    public convenience init(manager: String, version: Version) {
        self.init(
            manager: manager, version: version,
            progress: Progress(totalUnitCount: MigrationContext.progressUnits),
            isCancelled: { false }, onProgress: { _ in })
    }

    static let progressUnits: Int64 = 1_000

    /// Whether the run was cancelled. In-flight steps may finish; throwing rolls them back.
    public var isCancelled: Bool { isCancelledCheck() }

    /// Throws `CancellationError` if the run was cancelled.
    public func checkCancellation() throws {
        if isCancelled { throw CancellationError() }
    }

    /// Reports that `fraction` (0...1) of the step is done.
    public func reportProgress(_ fraction: Double) {
        let clamped = min(max(fraction, 0), 1)
        progress.completedUnitCount = Int64((clamped * Double(Self.progressUnits)).rounded())
        progressHandler(clamped)
    }

    /// Reports that `completed` of `total` units of work are done.
    public func reportProgress(completed: Int, of total: Int) {
        reportProgress(total > 0 ? Double(completed) / Double(total) : 1)
    }
}
