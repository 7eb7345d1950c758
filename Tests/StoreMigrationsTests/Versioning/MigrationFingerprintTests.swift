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
            63: "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34",
            64: "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb",
            119: "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb",
            120: "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c",
        ]
        for (count, digest) in boundaries {
            #expect(SHA256.hexDigest(of: String(repeating: "a", count: count).utf8) == digest, "\(count) bytes")
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
