import Foundation
import Testing
@testable import StoreMigrations

@Suite struct MigrationFingerprintTests {
    @Test func sha256MatchesTheStandardsVectors() {
        // FIPS 180-4's examples: one block, and a message whose padding needs a second block.
        #expect(SHA256.hexDigest(of: Array("".utf8)) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hexDigest(of: Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hexDigest(of: Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(SHA256.hexDigest(of: [UInt8](repeating: 0x61, count: 1000)).hasPrefix("41edece42d63e8d9bf515a9ba6932e1c"))
        // Either side of each padding boundary (sha256sum of that many "a"s).
        let boundaries = [
            55: "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318",
            56: "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a",
            63: "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34",
            64: "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb",
            65: "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0",
            119: "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb",
            120: "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c",
            1000: "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3",
        ]
        for (count, digest) in boundaries {
            #expect(SHA256.hexDigest(of: String(repeating: "a", count: count).utf8) == digest, "\(count) bytes")
        }
    }

    @Test func sha256OfNonASCIIAndEveryByteValue() {
        // sha256sum of the UTF-8 texts, and of the 256 byte values four times over.
        #expect(SHA256.hexDigest(of: "café ☕ naïve 日本語 — 🦊\r\n".utf8)
            == "875fad58e0f19a96c4e8d48f3fb8450d3cf41dea39561bebb2b67873e1ddeff6")
        // The fingerprint hashes the text with its line ending taken as `\n`.
        #expect(MigrationFingerprint(of: "café ☕ naïve 日本語 — 🦊\r\n").rawValue
            == "v1:917e805ae329fc149d039e769ab7e2cccead4d791cae7c175ecbb0b0391478cd")
        let everyByte = (0..<1024).map { UInt8(truncatingIfNeeded: $0) }
        #expect(SHA256.hexDigest(of: everyByte) == "785b0751fc2c53dc14a4ce3d800e69ef9ce1009eb327ccf458afe09c242c26c9")
    }

    @Test func sha256MatchesAPlainWritingOfTheStandardOnEveryLengthAndAlignment() {
        // The unrolled compression, the unaligned loads and the padding against FIPS 180-4 written
        // plainly, on lengths across four blocks, each read from an odd offset of a larger buffer.
        var generator = SystemRandomNumberGenerator()
        let pool = (0..<400).map { _ in UInt8.random(in: 0...255, using: &generator) }
        for length in 0...300 {
            let offset = length % 7
            let slice = pool[offset..<(offset + length)]
            #expect(SHA256.hexDigest(of: slice) == PlainSHA256.hexDigest(of: Array(slice)), "\(length) bytes at \(offset)")
        }
    }

    @Test func onlyACarriageReturnBeforeALineFeedIsDropped() {
        for text in ["a\r\r\nb", "a\rb", "a\r", "\r\n\r\n", "\r", "x\r\ny\rz\r\r"] {
            let normalized = text.replacingOccurrences(of: "\r\n", with: "\n")
            #expect(MigrationFingerprint(of: text).rawValue == "v1:" + SHA256.hexDigest(of: normalized.utf8), "\(text.debugDescription)")
        }
        #expect(MigrationFingerprint(of: "a\rb") != MigrationFingerprint(of: "ab"))
        #expect(MigrationFingerprint(of: "a\r") != MigrationFingerprint(of: "a"))
    }

    @Test func theStoredFormNamesItsAlgorithmAndLineEndingsDoNotCount() {
        let fingerprint = MigrationFingerprint(of: "abc")
        #expect(fingerprint.rawValue == "v1:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(fingerprint.description == "v1:ba7816bf8f01")
        #expect(fingerprint.algorithm == "v1")
        #expect(MigrationFingerprint(of: "a;\r\nb;\r\n") == MigrationFingerprint(of: "a;\nb;\n"))
        #expect(MigrationFingerprint(of: "a;\nb;") != MigrationFingerprint(of: "a;\nb; "))
        #expect(MigrationFingerprint(stored: "no colon") == nil)
        #expect(MigrationFingerprint(stored: "v1:") == nil)
    }

    @Test func onlyFingerprintsOfOneAlgorithmAreCompared() throws {
        let older = try #require(MigrationFingerprint(stored: "v0:1234"))
        let current = MigrationFingerprint(of: "ALTER TABLE t ADD COLUMN c")
        #expect(!current.differs(fromRecorded: nil))
        #expect(!current.differs(fromRecorded: current))
        #expect(current.differs(fromRecorded: MigrationFingerprint(of: "ALTER TABLE t ADD COLUMN d")))
        #expect(!current.differs(fromRecorded: older))
    }
}

/// SHA-256 as FIPS 180-4 writes it, a step at a time, to check the library's fast one against.
private enum PlainSHA256 {
    static func hexDigest(of message: [UInt8]) -> String {
        // The constants are the library's: the standard's vectors above pin them.
        let k = SHA256.roundConstants
        func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x >> n) | (x << (32 - n)) }
        var padded = message + [0x80]
        while padded.count % 64 != 56 { padded.append(0) }
        let bits = UInt64(message.count) * 8
        padded += (0..<8).map { UInt8(truncatingIfNeeded: bits >> (56 - 8 * UInt64($0))) }
        var hash: [UInt32] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]
        for start in stride(from: 0, to: padded.count, by: 64) {
            var w = (0..<16).map { i in
                padded[start + 4 * i ..< start + 4 * i + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            }
            for i in 16..<64 {
                let s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
                let s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
                w.append(w[i - 16] &+ s0 &+ w[i - 7] &+ s1)
            }
            var v = hash
            for i in 0..<64 {
                let t1 = v[7] &+ (rotr(v[4], 6) ^ rotr(v[4], 11) ^ rotr(v[4], 25)) &+ ((v[4] & v[5]) ^ (~v[4] & v[6])) &+ k[i] &+ w[i]
                let t2 = (rotr(v[0], 2) ^ rotr(v[0], 13) ^ rotr(v[0], 22)) &+ ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]))
                v = [t1 &+ t2, v[0], v[1], v[2], v[3] &+ t1, v[4], v[5], v[6]]
            }
            hash = zip(hash, v).map { $0 &+ $1 }
        }
        return hash.map { word in (0..<8).map { String(word >> (28 - 4 * UInt32($0)) & 0xf, radix: 16) }.joined() }.joined()
    }
}
