import Dispatch
import Foundation

/// A manager's fingerprints by position (ascending version), computed from its registrations'
/// texts once per plan or run.
///
/// Few or short texts are fingerprinted as the table is made. Enough text to be worth other
/// threads (two chunks of ``bytesPerChunk`` at least: hundreds of migrations, or a declared
/// schema's statements) is fingerprinted on a queue of the table's own, in chunks on the
/// machine's cores, and a reader waits for it only when it reads a fingerprint. A launch that
/// needs them at once (a store with migrations applied, whose recorded fingerprints the plan
/// compares) waits as long as computing them in place would take; a new store's first step
/// reads them only to record them, after its body, so they are computed while the body runs
/// (see BENCHMARKS.md, creation from the declared schema).
final class FingerprintTable: @unchecked Sendable {
    // Unchecked: `values` is written once, by `queue`'s block before it leaves `computed`, or by
    // the initializer when there is no block; it is read only after waiting on `computed`, which
    // orders that write before every read.
    private var values: [MigrationFingerprint?] = []
    private let computed = DispatchGroup()
    /// Whether no migration has a fingerprint: the table then holds nothing to wait for.
    let isEmpty: Bool

    /// The text, in bytes, a chunk of fingerprints must hold to be worth handing to another
    /// thread, counting each text's own cost as `costPerText` bytes more (see BENCHMARKS.md).
    static let bytesPerChunk = 16 * 1024
    static let costPerText = 64

    /// Starts fingerprinting `texts` (`nil` for a migration without a fingerprint): in place
    /// when one chunk holds them, else on a queue of the table's own in as many chunks as
    /// ``chunkCount(for:processors:)`` gives for `processors` cores.
    init(_ texts: [String?], processors: Int = ProcessInfo.processInfo.activeProcessorCount) {
        isEmpty = !texts.contains { $0 != nil }
        guard !isEmpty else { return }
        let chunks = Self.chunkCount(for: texts, processors: processors)
        guard chunks > 1 else {
            values = Self.fingerprints(of: texts, chunks: 1)
            return
        }
        computed.enter()
        DispatchQueue(label: "StoreMigrations.FingerprintTable").async { [self] in
            values = Self.fingerprints(of: texts, chunks: chunks)
            computed.leave()
        }
    }

    /// Every fingerprint by position, once computed; empty when ``isEmpty``.
    var all: [MigrationFingerprint?] {
        computed.wait()
        return values
    }

    /// The fingerprint of the migration at `position`, once computed; `nil` when it has none.
    subscript(position: Int) -> MigrationFingerprint? {
        guard !isEmpty else { return nil }
        computed.wait()
        return values[position]
    }

    /// How many contiguous chunks `texts`' fingerprints are computed in: one (on the calling
    /// thread) unless there is enough text for two chunks of ``bytesPerChunk``, and never more
    /// than the machine's cores.
    static func chunkCount(for texts: [String?], processors: Int) -> Int {
        var work = 0
        for case let text? in texts { work += text.utf8.count + costPerText }
        return max(1, min(processors, texts.count, work / bytesPerChunk))
    }

    /// `texts`' fingerprints by position, computed in `chunks` contiguous ranges of positions, on
    /// the machine's cores when there is more than one.
    ///
    /// The fingerprints are independent and pure, and an app with hundreds of migrations computes
    /// them at every launch: each chunk writes its own positions of one preallocated array.
    static func fingerprints(of texts: [String?], chunks: Int) -> [MigrationFingerprint?] {
        guard chunks > 1, texts.count >= chunks else { return texts.map { $0.map(MigrationFingerprint.init(of:)) } }
        return [MigrationFingerprint?](unsafeUninitializedCapacity: texts.count) { buffer, initializedCount in
            // Shared with the chunks unchecked: each initializes only its own positions, and
            // `concurrentPerform` returns once every chunk has.
            nonisolated(unsafe) let base = buffer.baseAddress!
            DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
                for position in texts.count * chunk / chunks..<texts.count * (chunk + 1) / chunks {
                    (base + position).initialize(to: texts[position].map(MigrationFingerprint.init(of:)))
                }
            }
            initializedCount = texts.count
        }
    }
}
