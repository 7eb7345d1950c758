import Dispatch
import Foundation
import Testing
@testable import StoreMigrations

@Suite struct FingerprintTableTests {
    /// Texts that exercise what a fingerprint normalizes and pads: line endings in every
    /// combination, text outside ASCII, the empty text, lengths either side of the 55/56-byte and
    /// 64-byte padding boundaries, with migrations that have no fingerprint between them.
    static let awkwardTexts: [String?] = (0..<701).map { position in
        switch position % 9 {
        case 0: return nil
        case 1: return ""
        case 2: return String(repeating: "a", count: 54 + position % 12)
        case 3: return "CREATE TABLE t\(position) (id INTEGER);\r\nCREATE INDEX i\(position) ON t\(position)(id);\r\n"
        case 4: return "line\rline\r\r\nline\n\r\(position)\r"
        case 5: return "INSERT INTO notes VALUES ('café ☕ naïve 日本語 — 🦊 \(position)');"
        case 6: return String(repeating: "é", count: 27 + position % 6)
        case 7: return nil
        default: return String(repeating: "SELECT \(position);\n", count: 1 + position % 40)
        }
    }

    static func serialFingerprints(_ texts: [String?]) -> [MigrationFingerprint?] {
        texts.map { $0.map(MigrationFingerprint.init(of:)) }
    }

    static func given(_ texts: [String?]) -> [FingerprintText?] {
        texts.map { $0.map(FingerprintText.given) }
    }

    @Test(arguments: [1, 2, 3, 4, 7, 8, 64, 700, 701])
    func chunkedFingerprintsEqualTheSerialOnesPositionByPosition(chunks: Int) {
        let serial = Self.serialFingerprints(Self.awkwardTexts)
        let chunked = FingerprintTable.fingerprints(of: Self.given(Self.awkwardTexts), chunks: chunks)
        #expect(chunked.count == serial.count)
        if let position = serial.indices.first(where: { chunked[$0] != serial[$0] }) {
            Issue.record("first difference at position \(position) of \(serial.count), in \(chunks) chunks")
        }
    }

    @Test func aManagerWithManyTextsIsFingerprintedInChunksWithTheSerialValues() {
        #expect(FingerprintTable.chunkCount(for: Self.given(Self.awkwardTexts), processors: 8) > 1)
        let options = Self.awkwardTexts.enumerated().map { position, text in
            var options = MigrationOptions.named("migration \(position)")
            options.fingerprint = text
            return options
        }
        let labels = MigrationLabels(options)
        #expect(labels.fingerprints.all == Self.serialFingerprints(Self.awkwardTexts))
        #expect(labels[3].name == "migration 3")
        #expect(labels[0].fingerprint == nil)
        var read: [(Int, MigrationLabel)] = []
        labels.forEach(in: 2..<5) { read.append(($0, $1)) }
        #expect(read.map(\.0) == [0, 1, 2])
        #expect(read.map(\.1) == [labels[2], labels[3], labels[4]])
        var unlabelled: [MigrationLabel] = []
        MigrationLabels([MigrationOptions(), MigrationOptions()]).forEach(in: 0..<2) { unlabelled.append($1) }
        #expect(unlabelled == [MigrationLabel(), MigrationLabel()])
    }

    @Test(arguments: [true, false])
    func aTableIsComputedOnceWhetherAsideOrByItsFirstReaderAndReadByAllOnceComputed(aside: Bool) {
        let serial = Self.serialFingerprints(Self.awkwardTexts)
        // Read from many threads at once, first by position (a squash's records), then whole (the
        // plan of a store with records): computed aside, each reader waits for the table's queue;
        // else the first reader computes them and the others wait for it.
        for processors in [2, 8] {
            let table = FingerprintTable(Self.given(Self.awkwardTexts), processors: processors)
            #expect(!table.isEmpty)
            if aside { table.computeAside() }
            let readers = 16
            let read = ReadPositions(count: readers)
            DispatchQueue.concurrentPerform(iterations: readers) { reader in
                let position = serial.count * reader / readers
                read.set(reader, table[position] == serial[position])
            }
            #expect(read.all == Array(repeating: true, count: readers))
            #expect(table.all == serial)
            table.computeAside()
            #expect(table.all == serial, "computed once: a later start aside changes nothing")
        }
    }

    @Test func aReaderTakesOverAComputationWhoseQueueHasNotStartedIt() {
        // Every worker of the pool may be waiting for a table of its own: a reader never waits
        // for a block that has not started. The queue is held until the read returns, within a
        // generous bound; past it, the test fails and lets the queue go.
        let serial = Self.serialFingerprints(Self.awkwardTexts)
        let queue = DispatchQueue(label: "held")
        queue.suspend()
        let table = FingerprintTable(Self.given(Self.awkwardTexts), processors: 2)
        table.computeAside(on: queue)
        let read = ReadPositions(count: 1)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            read.set(0, table.all == serial)
            done.signal()
        }
        if done.wait(timeout: .now() + 60) == .timedOut {
            Issue.record("the reader waited for the queued block")
            queue.resume()
            done.wait()
        } else {
            queue.resume()
        }
        #expect(read.all == [true])
        queue.sync {}
        #expect(table.all == serial, "the late block changed nothing")
    }

    @Test func aTableWithoutTextsIsEmptyAndReadsNil() {
        let table = FingerprintTable(Array(repeating: nil, count: 500))
        #expect(table.isEmpty)
        #expect(table[499] == nil)
        #expect(table.all.isEmpty)
    }

    @Test func fewOrShortTextsStayOnTheCallingThreadAndChunksNeverOutnumberCores() {
        let short = Self.given(Array(repeating: "CREATE TABLE t (id INTEGER);", count: 64))
        #expect(FingerprintTable.chunkCount(for: short, processors: 8) == 1)
        #expect(FingerprintTable.chunkCount(for: [], processors: 8) == 1)
        #expect(FingerprintTable.chunkCount(for: Array(repeating: nil, count: 10_000), processors: 8) == 1)
        let long = Self.given(Array(repeating: String(repeating: "x", count: 4096), count: 64))
        #expect(FingerprintTable.chunkCount(for: long, processors: 1) == 1)
        #expect(FingerprintTable.chunkCount(for: long, processors: 4) == 4)
        #expect(FingerprintTable.chunkCount(for: long, processors: 64) == 16)
        let fewHuge = Self.given(Array(repeating: String(repeating: "x", count: 1 << 20), count: 3))
        #expect(FingerprintTable.chunkCount(for: fewHuge, processors: 8) == 3)
    }

    @Test(arguments: [1, 700])
    func aMadeTextIsPreparedAsideByARunBeforeItsFingerprintAndNeverByAPlan(givenTexts: Int) throws {
        // A declared schema's statements and check, made on the table's queue while the run's
        // step opens its store: even when one chunk holds every fingerprint (a short history).
        let made = CountedText("CREATE TABLE note (id INTEGER);")
        let texts = Self.given(Array(Self.awkwardTexts.prefix(givenTexts))) + [.made(made)]
        let expected = Self.serialFingerprints(Array(Self.awkwardTexts.prefix(givenTexts)) + [made.value])

        let queue = DispatchQueue(label: "aside")
        let run = FingerprintTable(texts, processors: 2)
        run.computeAside(on: queue)
        queue.sync {}
        #expect(made.counts == CountedText.Counts(prepared: 1, read: 1), "prepared, then read for its fingerprint, aside")
        #expect(run.all == expected)
        #expect(made.counts.read == 1, "the reader found the fingerprints computed")

        let plan = FingerprintTable(texts, processors: 2)
        #expect(plan.all == expected)
        #expect(made.counts == CountedText.Counts(prepared: 1, read: 2), "a plan reads the text and prepares nothing")
        #expect(try #require(plan.all.last) == MigrationFingerprint(of: made.value))
    }
}

/// A text made when read, counting how often it was prepared and read.
private final class CountedText: MadeFingerprintText, @unchecked Sendable {
    // Unchecked: every access to `counted` holds `lock`.
    struct Counts: Equatable {
        var prepared = 0
        var read = 0
    }

    let value: String
    private let lock = NSLock()
    private var counted = Counts()

    init(_ value: String) { self.value = value }

    var text: String {
        lock.withLock { counted.read += 1 }
        return value
    }

    func prepareAside() { lock.withLock { counted.prepared += 1 } }

    var counts: Counts { lock.withLock { counted } }
}

/// What each reader of ``FingerprintTableTests`` found, by reader.
private final class ReadPositions: @unchecked Sendable {
    // Unchecked: every access holds `lock`.
    private let lock = NSLock()
    private var found: [Bool]

    init(count: Int) { found = Array(repeating: false, count: count) }

    func set(_ reader: Int, _ value: Bool) { lock.withLock { found[reader] = value } }
    var all: [Bool] { lock.withLock { found } }
}
