import Dispatch
import Foundation

/// Each migration's name and fingerprint of a manager frozen for a plan or run, by position
/// (ascending version): what plans and reports show and what the step executor records with an
/// applied migration. Fingerprints are computed here, once per plan, from the registrations'
/// texts.
///
/// Most apps name few migrations or none: without any name or fingerprint, the arrays stay
/// empty and a launch pays nothing for them.
struct MigrationLabels: Sendable {
    /// By position, when any migration has a name; else empty.
    let names: [String?]
    /// By position, when any migration has a fingerprint; else empty.
    let fingerprints: [MigrationFingerprint?]

    init(_ options: [MigrationOptions]) {
        names = options.contains { $0.name != nil } ? options.map(\.name) : []
        let texts = options.map(\.fingerprint)
        fingerprints = texts.contains { $0 != nil }
            ? Self.fingerprints(
                of: texts, chunks: Self.chunkCount(for: texts, processors: ProcessInfo.processInfo.activeProcessorCount))
            : []
    }

    /// The text, in bytes, a chunk of fingerprints must hold to be worth handing to another
    /// thread, counting each text's own cost as `costPerText` bytes more (see BENCHMARKS.md).
    static let bytesPerChunk = 16 * 1024
    static let costPerText = 64

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

    /// The migration at `position`'s name and fingerprint.
    subscript(position: Int) -> MigrationLabel {
        MigrationLabel(
            name: names.isEmpty ? nil : names[position], fingerprint: fingerprints.isEmpty ? nil : fingerprints[position])
    }
}

/// One migration's name and fingerprint, recorded with it when it is applied.
package struct MigrationLabel: Sendable, Hashable {
    package var name: String?
    package var fingerprint: MigrationFingerprint?

    package init(name: String? = nil, fingerprint: MigrationFingerprint? = nil) {
        self.name = name
        self.fingerprint = fingerprint
    }
}
