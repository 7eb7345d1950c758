import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// What a ``CacheStore`` promises a resumable migration: each batch at least once. A batch whose
/// files were written but whose record was not (the marker's replacement failed, as a kill
/// between the two would leave it) runs again at the next launch; committed batches never do.
@Suite struct CacheResumableBatchTests {
    let folder: TemporaryFolder
    let directory: URL

    init() throws {
        folder = try TemporaryFolder()
        directory = folder.file("Thumbnails")
    }

    /// Fails the `failing`-th replacement of the marker (from 1), as if the process died just
    /// before it; every other one goes through.
    private final class MarkerReplacements: @unchecked Sendable {
        // `lock` guards `count`.
        private let lock = NSLock()
        private var count = 0
        private let failing: Int

        init(failing: Int) { self.failing = failing }

        var faults: AtomicFile.Faults {
            AtomicFile.Faults { [self] operation in
                guard operation == .replace else { return nil }
                return lock.withLock {
                    count += 1
                    return count == failing ? EIO : nil
                }
            }
        }
    }

    /// A manager whose resumable migration appends one line a unit to `log.txt`: not idempotent.
    private func launch(_ store: CacheStore) throws -> MigrationReport {
        let coordinator = MigrationCoordinator(appVersion: "1")
        let thumbnails = try coordinator.manager("thumbnails", store: store)
        thumbnails.registerResumable("1", batchSize: .fixed(2)) { cache, batch in
            let first = batch.cursor.flatMap(Int.init).map { $0 + 1 } ?? 0
            let units = Array(first..<min(first + batch.limit, 6))
            let log = cache.fileURL(for: "log.txt")
            var text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            for unit in units { text += "unit \(unit)\n" }
            try Data(text.utf8).write(to: log)
            guard let last = units.last, last < 5 else { return .finished(processed: units.count) }
            return .more(cursor: String(last), processed: units.count, total: 6)
        }
        return try coordinator.run()
    }

    private func loggedUnits() throws -> [String] {
        try String(contentsOf: directory.appendingPathComponent("log.txt"), encoding: .utf8)
            .split(separator: "\n").map(String.init)
    }

    @Test func theStoreSaysItsBatchesAreNotExactlyOnce() {
        #expect(CacheStore(directory: directory).batchesAreExactlyOnce == false)
    }

    @Test func aBatchWrittenButNotRecordedRunsAgainAndCommittedBatchesDoNot() throws {
        // The first batch's record goes through; the second's does not.
        let replacements = MarkerReplacements(failing: 2)
        let crashed = CacheStore(directory: directory, lockTimeout: .seconds(30), faults: replacements.faults)
        #expect(throws: MigrationRunError.self) { try launch(crashed) }
        #expect(try loggedUnits() == ["unit 0", "unit 1", "unit 2", "unit 3"])
        #expect(try CacheStore(directory: directory).readRecords()["thumbnails"]?.inProgress.first?.cursor == "1")

        let report = try launch(CacheStore(directory: directory))
        #expect(report.steps.map(\.outcome) == [.applied])
        // At least once: units 2 and 3 twice, the committed batch's units once.
        #expect(try loggedUnits() == ["unit 0", "unit 1", "unit 2", "unit 3", "unit 2", "unit 3", "unit 4", "unit 5"])
        #expect(try CacheStore(directory: directory).readRecords()["thumbnails"]?.appliedVersions == ["1"])
    }
}
