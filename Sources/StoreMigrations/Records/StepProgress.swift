import Foundation

/// How far a resumable migration has got: kept in its manager's record after every batch, so
/// that the next batch, the next launch or another process resumes where the last committed
/// batch ended.
///
/// ```swift
/// if let progress = try library.record().progress(of: "2.0") {
///     print(progress)   // 2.0: 40% (400000 of 1000000), resumes after rowid 400000, about 12 s left
/// }
/// ```
public struct StepProgress: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The migration's version.
    public let version: Version
    /// Where the next batch starts, as the migration's body wrote it (the last key done, say).
    public var cursor: String
    /// How many units (rows, items) the committed batches processed.
    public var done: Int
    /// How many units there are in all, when the body knows; an estimate.
    public var total: Int?
    /// How many batches have committed.
    public var batches: Int
    /// The seconds the committed batches took, together: their work, not the time between
    /// launches.
    public var elapsed: TimeInterval
    /// The fingerprint of the registration whose batches committed this progress, when it has
    /// one: a relaunch with an edited body is compared with it, as an applied migration is.
    public internal(set) var fingerprint: MigrationFingerprint?
    /// The size the next batch should have, as the committed batches learnt it (for
    /// ``BatchSize/timeTarget(_:initial:)``): a relaunch starts from there rather than from the
    /// initial size, so that a step killed often does not spend each launch growing its batches
    /// again; its first batch is a quarter of it, to commit soon after the launch.
    public internal(set) var batchSize: Int?

    /// Creates the progress of a migration.
    package init(
        version: Version, cursor: String, done: Int, total: Int? = nil, batches: Int, elapsed: TimeInterval,
        fingerprint: MigrationFingerprint? = nil, batchSize: Int? = nil
    ) {
        self.version = version
        self.cursor = cursor
        self.done = done
        self.total = total
        self.batches = batches
        self.elapsed = elapsed
        self.fingerprint = fingerprint
        self.batchSize = batchSize
    }

    /// Units per second over the committed batches, or `nil` before any took measurable time.
    public var rate: Double? { elapsed > 0 && done > 0 ? Double(done) / elapsed : nil }

    /// The share done, from 0 to 1, when the total is known.
    public var fractionDone: Double? {
        guard let total, total > 0 else { return nil }
        return min(1, Double(done) / Double(total))
    }

    /// The seconds the rest should take at the measured rate, when the total is known.
    public var estimatedTimeLeft: TimeInterval? {
        guard let total, let rate else { return nil }
        return Double(max(0, total - done)) / rate
    }

    public var description: String {
        var text = "\(version): "
        if let total, let fraction = fractionDone {
            text += "\(Int(fraction * 100))% (\(done) of \(total))"
        } else {
            text += "\(done) done"
        }
        text += " in \(batches) batch\(batches == 1 ? "" : "es"), resumes after \(cursor)"
        if let left = estimatedTimeLeft { text += ", about \(Self.duration(left)) left" }
        return text
    }

    private static func duration(_ seconds: TimeInterval) -> String {
        if seconds < 90 { return "\(Int(seconds.rounded(.up))) s" }
        if seconds < 5_400 { return "\(Int((seconds / 60).rounded(.up))) min" }
        return String(format: "%.1f h", seconds / 3_600)
    }
}
