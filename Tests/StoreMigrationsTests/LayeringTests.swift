import Foundation
import Testing

/// The module's folders form a one-way flow, each knowing only those before it. This reads the
/// sources and fails on any code that names a type declared in a later folder.
@Suite struct LayeringTests {
    static let flow = ["Versioning", "Graph", "Planning", "Scheduling", "Coordination", "Support", "Stores"]

    static var moduleFolder: URL {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/StoreMigrations")
    }

    /// Every Swift file under `folder`, recursively.
    static func sources(in folder: String) throws -> [URL] {
        let root = moduleFolder.appendingPathComponent(folder)
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
        let pattern = #"(?m)^(?:@\w+\s+)*(?:public |internal |fileprivate |private )?(?:final )?(?:struct|class|enum|protocol|actor|typealias) (\w+)"#
        let regex = try! NSRegularExpression(pattern: pattern)
        let range = NSRange(code.startIndex..., in: code)
        return regex.matches(in: code, range: range).compactMap { Range($0.range(at: 1), in: code).map { String(code[$0]) } }
    }

    @Test func everyFolderIsInTheFlow() throws {
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.moduleFolder.path)
            .filter { !$0.contains(".") }
        #expect(Set(folders) == Set(Self.flow))
    }

    @Test func noFolderNamesATypeOfALaterFolder() throws {
        var declaredIn: [String: Int] = [:]
        var codeByFolder: [[(URL, String)]] = []
        for (index, folder) in Self.flow.enumerated() {
            var files: [(URL, String)] = []
            for url in try Self.sources(in: folder) {
                let code = try Self.code(of: url)
                for name in Self.declaredTypes(in: code) { declaredIn[name] = index }
                files.append((url, code))
            }
            codeByFolder.append(files)
        }
        #expect(declaredIn["MigrationGraph"] == 1 && declaredIn["SQLiteStore"] == 6, "the scan finds the types")
        var violations: [String] = []
        for (index, files) in codeByFolder.enumerated() {
            let later = declaredIn.filter { $0.value > index }.map(\.key)
            for (url, code) in files {
                for name in later where code.range(of: "\\b\(name)\\b", options: .regularExpression) != nil {
                    violations.append("\(Self.flow[index])/\(url.lastPathComponent) names \(name) (\(Self.flow[declaredIn[name]!]))")
                }
            }
        }
        #expect(violations.sorted() == [])
    }
}
