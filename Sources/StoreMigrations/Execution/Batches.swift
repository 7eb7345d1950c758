/// What one batch of a resumable migration is asked to do; see
/// ``MigrationManager/registerResumable(_:dependsOn:batchSize:deferred:options:_:)``.
///
/// A batch processes at most ``limit`` units (rows, files, items) after ``cursor``, and says
/// where the next batch starts. Its writes and the new cursor commit together, in one
/// transaction of the store: a kill at any moment loses at most the batch in flight, which the
/// next launch does again from the same cursor.
public struct BatchRequest: Sendable, Hashable {
    /// Where to start: what the last committed batch returned, `nil` for the first batch.
    public let cursor: String?
    /// At most how many units to process, adapted to the migration's ``BatchSize``.
    public let limit: Int
    /// How many units the committed batches processed.
    public let done: Int
    /// The total an earlier batch reported, if any.
    public let total: Int?

    init(cursor: String?, limit: Int, done: Int = 0, total: Int? = nil) {
        self.cursor = cursor
        self.limit = limit
        self.done = done
        self.total = total
    }
}

/// How a batch of a resumable migration ended.
public enum BatchResult: Sendable, Hashable {
    /// `processed` units are done; the next batch starts after `cursor`. `total`, when the body
    /// knows it, is how many units there are in all (shown in plans and progress).
    case more(cursor: String, processed: Int, total: Int? = nil)
    /// The migration is complete: it is recorded applied with this batch.
    case finished(processed: Int)
}

/// How many units the batches of a resumable migration process.
///
/// ```swift
/// library.registerResumable("2.0", batchSize: .fixed(500)) { db, batch in … }
/// ```
public enum BatchSize: Sendable, Hashable {
    /// Batches sized so that each one's work takes about `duration`, measured and adapted after
    /// every batch; the first batch processes `initial` units. A relaunch's first batch processes
    /// a quarter of the size the committed batches had learnt, and the next ones the learnt size.
    case timeTarget(Duration, initial: Int)
    /// Always `units` per batch.
    case fixed(Int)

    /// About 100 ms of work per commit: a kill loses on average half the batch in flight, so an
    /// app the system kills soon after each launch still moves on, while a commit (a write of
    /// the cursor, in a transaction of its own) costs little beside 100 ms of work.
    public static let automatic = BatchSize.timeTarget(.milliseconds(100), initial: 200)

    /// The first batch's size in this run: for a time target, a quarter of the size the committed
    /// batches had learnt (`learnt`, kept with the progress) when there is one. A relaunch's first
    /// batch then commits soon after the launch even when this launch runs slower than the one
    /// that learnt the size (a loaded machine, cold caches): a learnt size a kill always
    /// interrupts would never commit, so never be learnt again, and the step would not move. The
    /// next batch grows back to the rate this launch measures.
    func firstLimit(learnt: Int?) -> Int {
        switch self {
        case .timeTarget(_, let initial):
            return max(1, min(learnt.map { $0 / Self.relaunchShare } ?? initial, Self.largest))
        case .fixed(let units): return max(1, units)
        }
    }

    /// How much smaller than the learnt size a relaunch's first batch is: the fourfold growth a
    /// batch may have brings the second batch back to the learnt size.
    private static let relaunchShare = 4

    /// The next batch's size as a time target learns it (see ``nextLimit(after:processed:seconds:)``),
    /// kept with the progress; `nil` for a fixed size, which learns nothing.
    func learntLimit(after limit: Int, processed: Int, seconds: Double) -> Int? {
        guard case .timeTarget = self else { return nil }
        return nextLimit(after: limit, processed: processed, seconds: seconds)
    }

    /// The largest batch a time target asks for.
    private static let largest = 1 << 24

    /// The next batch's size, after one of `limit` units processed `processed` in `seconds`:
    /// the rate measured, times the target, growing at most fourfold a batch so that one fast
    /// batch (rows the condition skipped) cannot make the next one huge.
    func nextLimit(after limit: Int, processed: Int, seconds: Double) -> Int {
        guard case .timeTarget(let target, _) = self else { return limit }
        guard processed > 0, seconds > 0 else { return min(limit * 4, Self.largest) }
        let next = Double(processed) / seconds * target.seconds
        return max(1, min(Int(next), limit * 4, Self.largest))
    }
}
