import Foundation
import Testing

/// The folders of the three products form one-way flows, each folder knowing only those before
/// it: the core's, then one store product's (SQLite and PostgreSQL know the core, never each
/// other). This reads the sources and fails on any code that names a type declared in a later
/// folder of its flow.
@Suite struct LayeringTests {
    static let core = [
        "Text", "Versioning", "Graph", "Records", "Planning", "Scheduling", "StoreSeam", "Execution", "Reports", "Run", "Coordination",
        "Support", "Stores", "Fleet",
    ]
        .map { "StoreMigrations/" + $0 }
    static let sqlite = ["Driver", "Store", "Schema", "Fleet"].map { "StoreMigrationsSQLite/" + $0 }
    static let postgreSQL = ["Driver", "Store", "Fleet"].map { "StoreMigrationsPostgreSQL/" + $0 }
    /// The core and each store product after it; a product's files are checked against every
    /// flow they are in, so SQLite's never name PostgreSQL's types nor the other way round.
    static let flows = [core + sqlite + postgreSQL, core + postgreSQL + sqlite]

    static var sourcesFolder: URL {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources")
    }

    /// Every Swift file under `folder` (relative to `Sources`), recursively.
    static func sources(in folder: String) throws -> [URL] {
        let root = sourcesFolder.appendingPathComponent(folder)
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else { return [] }
        return walker.compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" }
    }

    /// The code of a file without its comments and string literals' contents.
    static func code(of url: URL) throws -> String {
        let text = try String(contentsOf: url, encoding: .utf8)
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            var line = String(line)
            if let comment = line.range(of: "//") { line = String(line[..<comment.lowerBound]) }
            return line.replacingOccurrences(of: #""[^"]*""#, with: "\"\"", options: .regularExpression)
        }.joined(separator: "\n")
    }

    /// The names of the types declared at the top level of `code`.
    static func declaredTypes(in code: String) -> [String] {
        let pattern = #"(?m)^(?:@\w+\s+)*(?:public |package |internal |fileprivate |private )?(?:final )?(?:struct|class|enum|protocol|actor|typealias) (\w+)"#
        let regex = try! NSRegularExpression(pattern: pattern)
        let range = NSRange(code.startIndex..., in: code)
        return regex.matches(in: code, range: range).compactMap { Range($0.range(at: 1), in: code).map { String(code[$0]) } }
    }

    @Test func everyFolderIsInTheFlow() throws {
        for module in ["StoreMigrations", "StoreMigrationsSQLite", "StoreMigrationsPostgreSQL"] {
            let folders = try FileManager.default.contentsOfDirectory(atPath: Self.sourcesFolder.appendingPathComponent(module).path)
                .filter { !$0.contains(".") }.map { module + "/" + $0 }
            #expect(Set(folders) == Set(Self.core + Self.sqlite + Self.postgreSQL).filter { $0.hasPrefix(module + "/") })
        }
    }

    @Test(arguments: flows) func noFolderNamesATypeOfALaterFolder(flow: [String]) throws {
        var declaredIn: [String: Int] = [:]
        var codeByFolder: [[(URL, String)]] = []
        for (index, folder) in flow.enumerated() {
            var files: [(URL, String)] = []
            for url in try Self.sources(in: folder) {
                let code = try Self.code(of: url)
                for name in Self.declaredTypes(in: code) { declaredIn[name] = index }
                files.append((url, code))
            }
            codeByFolder.append(files)
        }
        #expect(
            declaredIn["MigrationGraph"].map { flow[$0] } == "StoreMigrations/Graph"
                && declaredIn["SQLiteStore"].map { flow[$0] } == "StoreMigrationsSQLite/Store",
            "the scan finds the types")
        var violations: [String] = []
        for (index, files) in codeByFolder.enumerated() {
            let later = declaredIn.filter { $0.value > index }.map(\.key)
            for (url, code) in files {
                for name in later where code.range(of: "\\b\(name)\\b", options: .regularExpression) != nil {
                    violations.append("\(flow[index])/\(url.lastPathComponent) names \(name) (\(flow[declaredIn[name]!]))")
                }
            }
        }
        #expect(violations.sorted() == [])
    }
}
