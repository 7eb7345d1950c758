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
