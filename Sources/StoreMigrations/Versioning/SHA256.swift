/// SHA-256 (FIPS 180-4) of a byte sequence, for migration fingerprints.
///
/// Written out here because the core links nothing but Foundation, and Foundation outside Apple
/// platforms has no CryptoKit. A cryptographic hash rather than a checksum (Flyway's CRC32) or
/// FNV: a fingerprint is compared across releases and machines for as long as a store lives, and
/// two texts that differ must practically never share one. Fingerprints are computed only for
/// migrations that have a text to fingerprint, once per plan.
enum SHA256 {
    private typealias State = (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32)

    /// FIPS 180-4's 64 round constants (the standard's vectors in the tests pin them).
    static let roundConstants: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    /// The digest of `bytes`, as 64 lowercase hexadecimal digits.
    static func hexDigest(of bytes: some Collection<UInt8>) -> String {
        if let digest = bytes.withContiguousStorageIfAvailable({ hexDigest(of: $0, after: "") }) { return digest }
        return Array(bytes).withUnsafeBufferPointer { hexDigest(of: $0, after: "") }
    }

    /// `prefix` followed by the digest of `message` as 64 lowercase hexadecimal digits, written
    /// into one string: a fingerprint's stored form without a concatenation.
    static func hexDigest(of message: UnsafeBufferPointer<UInt8>, after prefix: StaticString) -> String {
        // A launch fingerprints every registered migration, hundreds of them when a fresh install
        // is created from a declared schema: the whole blocks are hashed where the text lies, only
        // the last one or two are copied to be padded, and nothing is allocated on the heap.
        var hash: State = (
            0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19
        )
        let wholeBlocks = message.count / 64
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { words in
            roundConstants.withUnsafeBufferPointer { constants in
                let words = words.baseAddress!, constants = constants.baseAddress!
                if let base = message.baseAddress {
                    for block in 0..<wholeBlocks {
                        compress(UnsafeRawPointer(base + block * 64), into: &hash, words: words, constants: constants)
                    }
                }
                let tailCount = message.count - wholeBlocks * 64
                let paddedCount = tailCount + 8 < 64 ? 64 : 128
                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 128) { padded in
                    let padded = padded.baseAddress!
                    if tailCount > 0 { padded.initialize(from: message.baseAddress! + wholeBlocks * 64, count: tailCount) }
                    padded[tailCount] = 0x80
                    (padded + tailCount + 1).initialize(repeating: 0, count: paddedCount - 8 - tailCount - 1)
                    let bitLength = UInt64(message.count) &* 8
                    UnsafeMutableRawPointer(padded + paddedCount - 8).storeBytes(of: bitLength.bigEndian, as: UInt64.self)
                    for block in 0..<(paddedCount / 64) {
                        compress(UnsafeRawPointer(padded + block * 64), into: &hash, words: words, constants: constants)
                    }
                }
            }
        }
        let prefixCount = prefix.utf8CodeUnitCount
        return withUnsafeBytes(of: hash) { words in
            String(unsafeUninitializedCapacity: prefixCount + 64) { text in
                for index in 0..<prefixCount { text[index] = prefix.utf8Start[index] }
                for wordIndex in 0..<8 {
                    let word = words.load(fromByteOffset: wordIndex * 4, as: UInt32.self)
                    for digit in 0..<8 {
                        text[prefixCount + wordIndex * 8 + digit] = hexDigits.utf8Start[Int(truncatingIfNeeded: word &>> UInt32(28 - digit * 4) & 0xf)]
                    }
                }
                return prefixCount + 64
            }
        }
    }

    private static let hexDigits: StaticString = "0123456789abcdef"

    /// Runs the compression function over the 64-byte block at `block`. Written for the
    /// optimizer: the eight working variables stay in locals, renamed from round to round rather
    /// than shifted, the schedule is computed in place, and the shifts are masking ones, which
    /// compile to rotations.
    @inline(__always)
    private static func compress(
        _ block: UnsafeRawPointer, into hash: inout State, words w: UnsafeMutablePointer<UInt32>,
        constants k: UnsafePointer<UInt32>
    ) {
        for index in 0..<16 {
            w[index] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: index * 4, as: UInt32.self))
        }
        for index in 16..<64 {
            let w15 = w[index - 15], w2 = w[index - 2]
            let s0 = rotate(rotate(w15, 11) ^ w15, 7) ^ (w15 &>> 3)
            let s1 = rotate(rotate(w2, 2) ^ w2, 17) ^ (w2 &>> 10)
            w[index] = w[index - 16] &+ s0 &+ w[index - 7] &+ s1
        }
        var (a, b, c, d, e, f, g, h) = hash
        var bc = b ^ c
        for index in stride(from: 0, to: 64, by: 8) {
            round(a, b, &d, e, f, g, &h, &bc, k[index] &+ w[index])
            round(h, a, &c, d, e, f, &g, &bc, k[index + 1] &+ w[index + 1])
            round(g, h, &b, c, d, e, &f, &bc, k[index + 2] &+ w[index + 2])
            round(f, g, &a, b, c, d, &e, &bc, k[index + 3] &+ w[index + 3])
            round(e, f, &h, a, b, c, &d, &bc, k[index + 4] &+ w[index + 4])
            round(d, e, &g, h, a, b, &c, &bc, k[index + 5] &+ w[index + 5])
            round(c, d, &f, g, h, a, &b, &bc, k[index + 6] &+ w[index + 6])
            round(b, c, &e, f, g, h, &a, &bc, k[index + 7] &+ w[index + 7])
        }
        hash = (
            hash.0 &+ a, hash.1 &+ b, hash.2 &+ c, hash.3 &+ d, hash.4 &+ e, hash.5 &+ f, hash.6 &+ g, hash.7 &+ h
        )
    }

    /// One round, with the variables passed in the order they have at that round: `d` takes the
    /// new `e`, `h` the new `a`. `c` is not needed: `bc` holds `b ^ c`, and the round leaves
    /// `a ^ b` in it, the next round's `b ^ c`, so the majority costs two operations, not four.
    /// Each sum of three rotations is written as nested rotations of one value, which needs one
    /// copy of it rather than three on a processor whose rotations overwrite their operand.
    @inline(__always)
    private static func round(
        _ a: UInt32, _ b: UInt32, _ d: inout UInt32, _ e: UInt32, _ f: UInt32, _ g: UInt32,
        _ h: inout UInt32, _ bc: inout UInt32, _ constantAndWord: UInt32
    ) {
        let sigma1 = rotate(rotate(rotate(e, 14) ^ e, 5) ^ e, 6)
        let t1 = h &+ sigma1 &+ (g ^ (e & (f ^ g))) &+ constantAndWord
        d = d &+ t1
        let ab = a ^ b
        let sigma0 = rotate(rotate(rotate(a, 9) ^ a, 11) ^ a, 2)
        h = t1 &+ sigma0 &+ (b ^ (ab & bc))
        bc = ab
    }

    @inline(__always)
    private static func rotate(_ value: UInt32, _ count: UInt32) -> UInt32 {
        value &>> count | value &<< (32 &- count)
    }
}
