import Foundation
import StoreMigrations

/// A cache of 20,000 files: remove half and move the rest into subfolders, in one migration.
/// Baseline: FileManager by hand.
struct CacheWorkload {
    let files: Int
    let timer: Timer

    func run() throws -> [Measurement] {
        let directory = try temporaryDirectory("cache")
        defer { try? FileManager.default.removeItem(at: directory) }
        let work = directory.appendingPathComponent("thumbnails", isDirectory: true)
        let payload = Data(repeating: 7, count: 128)
        func fill() throws {
            try? FileManager.default.removeItem(at: work)
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            let progress = ProgressLine(label: "cache (\(files) files)")
            for index in 0..<files {
                try payload.write(to: work.appendingPathComponent(name(index)))
                progress.update(index + 1, of: files)
            }
        }
        @Sendable func isObsolete(_ name: String) -> Bool { name.hasSuffix("0.png") || name.hasSuffix("2.png") || name.hasSuffix("4.png") || name.hasSuffix("6.png") || name.hasSuffix("8.png") }
        @Sendable func shard(_ name: String) -> String { "shard\(name.utf8.reduce(0) { ($0 &* 31 &+ Int($1)) & 0xFFFF } % 64)/\(name)" }

        func library() throws {
            let coordinator = MigrationCoordinator(appVersion: "2.0")
            try coordinator.manager("thumbnails", store: CacheStore(directory: work)).register("2.0") { cache in
                try cache.removeItems(matching: isObsolete)
                for file in try cache.files() { try cache.move(file, to: shard(file)) }
            }
            try coordinator.run()
        }
        func baseline() throws {
            let manager = FileManager.default
            for file in try manager.contentsOfDirectory(atPath: work.path) where isObsolete(file) {
                try manager.removeItem(at: work.appendingPathComponent(file))
            }
            for file in try manager.contentsOfDirectory(atPath: work.path) {
                let destination = work.appendingPathComponent(shard(file))
                try manager.createDirectory(at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
                try manager.moveItem(at: work.appendingPathComponent(file), to: destination)
            }
        }

        let (libraryRuns, baselineRuns) = try timer.compare(prepareLibrary: fill, library: library, prepareBaseline: fill, baseline: baseline)
        return [Measurement(
            workload: "cache (\(files) files)", metric: "migration vs FileManager by hand", runs: timer.runs,
            libraryMedian: libraryRuns.median, baselineMedian: baselineRuns.median, target: "≤ 1.2×")]
    }

    private func name(_ index: Int) -> String { "note-\(index).png" }
}
