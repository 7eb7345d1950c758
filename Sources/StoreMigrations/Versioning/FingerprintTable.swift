import Dispatch
import Foundation

/// A manager's fingerprints by position (ascending version), computed from its registrations'
/// texts at most once per plan or run, when first read or when a run starts them aside.
///
/// A plan reads the fingerprints of the migrations a store has applied, so a launch that upgrades
/// a store computes them as it plans, on the machine's cores when there is enough text
/// (``chunkCount(for:processors:)``), as before. A new store's plan reads none: its run starts
/// them on a queue of the table's own (``computeAside()``) and its first step reads them only to
/// record them, after its body, so they are computed while the body runs (see BENCHMARKS.md,
/// creation from the declared schema). Texts made when first read (``MadeFingerprintText``) are
/// prepared there first, while the step opens its store. A plan that is never run computes none.
final class FingerprintTable: @unchecked Sendable {
    private enum State {
        case pending
        /// Handed to the table's queue, whose block has not started: a reader takes the work
        /// over rather than wait for a thread the block may never get while every worker of the
        /// pool waits for a table of its own.
        case queued
        case computing
        case computed([MigrationFingerprint?])
    }

    // Unchecked: `state` is read and written holding `condition`, whose broadcast wakes the
    // readers waiting for a computation another thread is running.
    private let condition = NSCondition()
    private var state = State.pending
    private let texts: [FingerprintText?]
    private let processors: Int
    /// Whether no migration has a fingerprint: the table then holds nothing to compute.
    let isEmpty: Bool

    /// The text, in bytes, a chunk of fingerprints must hold to be worth handing to another
    /// thread, counting each text's own cost as `costPerText` bytes more (see BENCHMARKS.md).
    static let bytesPerChunk = 16 * 1024
    static let costPerText = 64

    /// The fingerprints of `texts` (`nil` for a migration without one), to be computed in as many
    /// chunks as ``chunkCount(for:processors:)`` gives for `processors` cores. The texts are not
    /// read here: a plan that makes the table and never needs its fingerprints (a new store's)
    /// would read hundreds of strings for their lengths, each a cache miss.
    init(_ texts: [FingerprintText?], processors: Int = ProcessInfo.processInfo.activeProcessorCount) {
        isEmpty = !texts.contains { $0 != nil }
        self.texts = isEmpty ? [] : texts
        self.processors = processors
    }

    /// Starts computing the fingerprints on `queue`, the table's own, unless a reader already
    /// started them: for a run whose steps record them after their bodies. The made texts are
    /// prepared first (``MadeFingerprintText/prepareAside()``). In as many chunks as a reader
    /// would: in one, a creation from the declared schema took longer (Benchmarks/BENCHMARKS.md).
    /// However few the texts, the caller only hands them over, where deciding whether they were
    /// worth it would read every one.
    func computeAside(on queue: DispatchQueue = DispatchQueue(label: "StoreMigrations.FingerprintTable")) {
        guard !isEmpty else { return }
        condition.lock()
        guard case .pending = state else {
            condition.unlock()
            return
        }
        state = .queued
        condition.unlock()
        queue.async { [self] in
            guard claim() else { return }
            for case .made(let text)? in texts { text.prepareAside() }
            finish(compute())
        }
    }

    /// Whether the caller takes the computation of the fingerprints on: none started it yet.
    private func claim() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        switch state {
        case .pending, .queued:
            state = .computing
            return true
        case .computing, .computed:
            return false
        }
    }

    /// Every fingerprint by position, computed now unless another thread is computing them, in
    /// which case it waits for them (never for a queued block that has not started); empty when
    /// ``isEmpty``.
    var all: [MigrationFingerprint?] {
        guard !isEmpty else { return [] }
        condition.lock()
        while true {
            switch state {
            case .computed(let values):
                condition.unlock()
                return values
            case .computing:
                condition.wait()
            case .pending, .queued:
                state = .computing
                condition.unlock()
                let values = compute()
                finish(values)
                return values
            }
        }
    }

    /// The fingerprint of the migration at `position`; `nil` when it has none.
    subscript(position: Int) -> MigrationFingerprint? {
        isEmpty ? nil : all[position]
    }

    private func compute() -> [MigrationFingerprint?] {
        Self.fingerprints(of: texts, chunks: Self.chunkCount(for: texts, processors: processors))
    }

    private func finish(_ values: [MigrationFingerprint?]) {
        condition.lock()
        state = .computed(values)
        condition.broadcast()
        condition.unlock()
    }

    /// How many contiguous chunks `texts`' fingerprints are computed in: one (on the calling
    /// thread) unless there is enough text for two chunks of ``bytesPerChunk``, and never more
    /// than the machine's cores.
    static func chunkCount(for texts: [FingerprintText?], processors: Int) -> Int {
        var work = 0
        for text in texts {
            switch text {
            case .given(let text)?: work += text.utf8.count + costPerText
            // Counted as a chunk's worth without making it: a declared schema of a few tables
            // already writes kilobytes of statements.
            case .made?: work += bytesPerChunk
            case nil: break
            }
        }
        return max(1, min(processors, texts.count, work / bytesPerChunk))
    }

    /// `texts`' fingerprints by position, computed in `chunks` contiguous ranges of positions, on
    /// the machine's cores when there is more than one.
    ///
    /// The fingerprints are independent and pure, and an app with hundreds of migrations computes
    /// them at every launch: each chunk writes its own positions of one preallocated array.
    static func fingerprints(of texts: [FingerprintText?], chunks: Int) -> [MigrationFingerprint?] {
        guard chunks > 1, texts.count >= chunks else { return texts.map { $0.map { MigrationFingerprint(of: $0.text) } } }
        return [MigrationFingerprint?](unsafeUninitializedCapacity: texts.count) { buffer, initializedCount in
            // Shared with the chunks unchecked: each initializes only its own positions, and
            // `concurrentPerform` returns once every chunk has.
            nonisolated(unsafe) let base = buffer.baseAddress!
            DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
                for position in texts.count * chunk / chunks..<texts.count * (chunk + 1) / chunks {
                    (base + position).initialize(to: texts[position].map { MigrationFingerprint(of: $0.text) })
                }
            }
            initializedCount = texts.count
        }
    }
}
