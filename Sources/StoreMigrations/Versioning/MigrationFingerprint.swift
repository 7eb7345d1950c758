import Foundation

/// What an applied migration looked like when it ran: a digest of the text the library can see
/// (the SQL of a SQL migration or file, or a string the author gives for a closure's body and
/// changes with it), stored with the migration in its store's record.
///
/// A plan compares each applied migration's recorded fingerprint with the one its registration
/// gives now and reports the migrations edited since they ran (``MigrationPlan/Manager/changedFingerprints``);
/// the manager's ``FingerprintPolicy`` decides what a run does about them.
///
/// ```swift
/// let options = MigrationOptions.named("backfill titles", fingerprint: "titles from notes, v2")
/// library.register("1.2", options: options) { db in … }
/// try library.record().applied.last?.fingerprint   // v1:3f0c…
/// ```
///
/// The stored form names its algorithm (`v1:` and the SHA-256 of the text's UTF-8 bytes, line
/// endings taken as `\n`, in lowercase hexadecimal), and fingerprints are only compared when
/// their algorithms are the same: a later release that fingerprints differently compares a
/// record of `v1` with the `v1` fingerprint of the text, so a library upgrade never reports every
/// migration as edited. A record written before fingerprints existed has none, and is never
/// reported.
public struct MigrationFingerprint: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The stored form, `v1:` and 64 hexadecimal digits.
    public let rawValue: String

    /// The algorithm this release computes fingerprints with, and the colon that ends it in the
    /// stored form.
    static let currentAlgorithmPrefix: StaticString = "v1:"

    /// The fingerprint of `text` with the current algorithm.
    package init(of text: String) {
        // The text's own UTF-8 bytes, searched for a carriage return with `memchr` and hashed
        // where they lie: a plan fingerprints every registered migration, and a launch that
        // creates a store from its declared schema fingerprints hundreds.
        var text = text
        rawValue = text.withUTF8 { bytes in
            guard let base = bytes.baseAddress, memchr(base, Int32(UInt8(ascii: "\r")), bytes.count) != nil else {
                return SHA256.hexDigest(of: bytes, after: Self.currentAlgorithmPrefix)
            }
            var normalized: [UInt8] = []
            normalized.reserveCapacity(bytes.count)
            var pendingReturn = false
            for byte in bytes {
                if pendingReturn, byte != UInt8(ascii: "\n") { normalized.append(UInt8(ascii: "\r")) }
                pendingReturn = byte == UInt8(ascii: "\r")
                if !pendingReturn { normalized.append(byte) }
            }
            if pendingReturn { normalized.append(UInt8(ascii: "\r")) }
            return normalized.withUnsafeBufferPointer { SHA256.hexDigest(of: $0, after: Self.currentAlgorithmPrefix) }
        }
    }

    /// A fingerprint as a store recorded it; `nil` for text that is not `algorithm:digest`.
    init?(stored: String) {
        guard let colon = stored.firstIndex(of: ":"), colon != stored.startIndex, stored.index(after: colon) != stored.endIndex
        else { return nil }
        rawValue = stored
    }

    /// The algorithm the fingerprint was computed with, `v1`.
    var algorithm: Substring { rawValue[..<rawValue.firstIndex(of: ":")!] }

    /// Whether `recorded`, the fingerprint of an applied migration, shows it different from what
    /// this fingerprint describes: `false` when none was recorded, or when the two were computed
    /// with different algorithms and so cannot be compared.
    func differs(fromRecorded recorded: MigrationFingerprint?) -> Bool {
        guard let recorded, recorded.algorithm == algorithm else { return false }
        return recorded != self
    }

    /// The algorithm and the first 12 digits, as plans and errors show it.
    public var description: String {
        String(rawValue.prefix(algorithm.count + 13))
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let fingerprint = MigrationFingerprint(stored: text) else {
            throw DecodingError.dataCorrupted(.init(
                codingPath: decoder.codingPath, debugDescription: "\(text.debugDescription) is not a fingerprint (algorithm:digest)"))
        }
        self = fingerprint
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
