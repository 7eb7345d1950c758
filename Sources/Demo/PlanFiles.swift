import Foundation
import StoreMigrations

/// Writes a plan's graph beside the stores: `plan.dot`, and `plan.svg` when Graphviz's `dot` is
/// installed.
enum PlanFiles {
    /// Writes the files and returns what to tell the user about them.
    static func write(_ plan: MigrationPlan, to directory: URL) throws -> String {
        let dotURL = directory.appendingPathComponent("plan.dot")
        try Data(plan.graphviz().utf8).write(to: dotURL, options: .atomic)
        guard let dot = executable(named: "dot") else {
            return "the plan's graph: \(dotURL.path) (install Graphviz for plan.svg)"
        }
        let svgURL = directory.appendingPathComponent("plan.svg")
        let process = Process()
        process.executableURL = dot
        process.arguments = ["-Tsvg", dotURL.path, "-o", svgURL.path]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            return "the plan's graph: \(dotURL.path) (dot failed with status \(process.terminationStatus))"
        }
        return "the plan's graph: \(dotURL.path) and \(svgURL.path)"
    }

    private static func executable(named name: String) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":")
            .map { URL(fileURLWithPath: String($0)).appendingPathComponent(name) }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }
}
