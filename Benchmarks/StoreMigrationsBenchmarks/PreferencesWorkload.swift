import Foundation
import StoreMigrations
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// A 100,000-key JSON preferences file: rename 10% of the keys and add 10,000, with the atomic
/// checkpoint. Baseline: JSONSerialization read, modify, and an atomic write by hand (temporary
/// file, fsync, rename, directory fsync: the same durability).
struct PreferencesWorkload {
    let keys: Int
    let timer: Timer

    func run() throws -> [Measurement] {
        let directory = try temporaryDirectory("preferences")
        defer { try? FileManager.default.removeItem(at: directory) }
        let template = directory.appendingPathComponent("template.json")
        var object: [String: Any] = [:]
        for index in 0..<keys {
            object[key(index)] = index % 3 == 0 ? index : index % 3 == 1 ? "value \(index)" : (index % 2 == 0)
        }
        try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted]).write(to: template)
        let work = directory.appendingPathComponent("prefs.json")
        func copyTemplate() throws {
            try? FileManager.default.removeItem(at: work)
            try FileManager.default.copyItem(at: template, to: work)
        }
        let renamed = stride(from: 0, to: keys, by: 10).map { $0 }
        let added = keys / 10

        func library() throws {
            let coordinator = MigrationCoordinator(appVersion: "2.0")
            try coordinator.manager("prefs", store: PreferencesStore(url: work)).register("2.0") { defaults in
                for index in renamed { try defaults.renameKey(.key(key(index)), to: .key(key(index) + "_v2")) }
                for index in 0..<added { try defaults.set(index, for: .key("added\(index)")) }
            }
            try coordinator.run()
        }
        func baseline() throws {
            var values = try JSONSerialization.jsonObject(with: Data(contentsOf: work)) as! [String: Any]
            for index in renamed {
                values[key(index) + "_v2"] = values.removeValue(forKey: key(index))
            }
            for index in 0..<added { values["added\(index)"] = index }
            let data = try JSONSerialization.data(withJSONObject: values, options: [.sortedKeys, .prettyPrinted])
            try writeAtomically(data, to: work)
        }

        let (libraryRuns, baselineRuns) = try timer.compare(
            prepareLibrary: copyTemplate, library: library, prepareBaseline: copyTemplate, baseline: baseline)
        return [Measurement(
            workload: "preferences (\(keys) keys)", metric: "migration vs JSONSerialization + atomic write", runs: timer.runs,
            libraryMedian: libraryRuns.median, baselineMedian: baselineRuns.median, target: "≤ 1.2×")]
    }

    private func key(_ index: Int) -> String { "key\(index)" }
}

/// Temporary file, fsync, rename over the target, fsync of the directory.
func writeAtomically(_ data: Data, to url: URL) throws {
    let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).tmp")
    try data.write(to: temporary)
    let file = open(temporary.path, O_RDONLY)
    fsync(file)
    close(file)
    guard rename(temporary.path, url.path) == 0 else { throw CocoaError(.fileWriteUnknown) }
    let folder = open(url.deletingLastPathComponent().path, O_RDONLY)
    fsync(folder)
    close(folder)
}
