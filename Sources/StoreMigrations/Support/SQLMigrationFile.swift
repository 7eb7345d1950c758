import Foundation

/// A migration kept as a `.sql` file in a folder of them, for the SQL stores' managers
/// (`registerSQLFiles(in:)` in the SQLite and PostgreSQL products).
///
/// A file is named `V<version>__<name>.sql`: a capital `V`, the migration's version, two
/// underscores, and its name with words joined by underscores (Flyway's convention). The name
/// part may be left out (`V2.sql`).
///
/// ```
/// migrations/
///   V1.0__create_notes.sql       1.0   "create notes"
///   V1.1__add_guid.sql           1.1   "add guid"
///   V1.1-1__backfill_guid.sql    1.1-1 "backfill guid"
///   V2.sql                       2     (no name)
/// ```
///
/// Other files (a `README.md`, hidden files) and folders are left alone. The migration's
/// fingerprint is the file's text, so editing an applied file is reported by the plan
/// (``MigrationFingerprint``).
public struct SQLMigrationFile: Sendable, Hashable {
    /// Where the file is.
    public let url: URL
    /// The migration's version, from the file's name.
    public let version: Version
    /// The migration's name, from the file's name: its underscores read as spaces.
    public let name: String?
    /// The file's text.
    public let sql: String

    /// The files of `folder` that are migrations, ascending by version.
    ///
    /// - Throws: ``SQLMigrationFileError`` for a folder that cannot be read, a `.sql` file whose
    ///   name is not a migration's or whose text is not UTF-8, or two files of one version.
    package static func files(in folder: URL, manager: String, store: String) throws -> [SQLMigrationFile] {
        func failure(_ url: URL, _ problem: String, _ fix: String) -> SQLMigrationFileError {
            SQLMigrationFileError(file: url.path, manager: manager, store: store, problem: problem, fix: fix)
        }
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        } catch {
            throw failure(folder, "cannot be read as a folder of migrations (\(error.localizedDescription.quotableInSentence))",
                          "Give the folder the migration files are in")
        }
        var files: [SQLMigrationFile] = []
        for fileName in names where fileName.lowercased().hasSuffix(".sql") && !fileName.hasPrefix(".") {
            let url = folder.appendingPathComponent(fileName)
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder), !isFolder.boolValue else { continue }
            let (version, name) = try parse(fileName, at: url, failure: failure)
            guard let data = FileManager.default.contents(atPath: url.path) else {
                throw failure(url, "cannot be read", "Give the app read access to it")
            }
            guard let sql = String(data: data, encoding: .utf8) else {
                throw failure(url, "is not UTF-8 text", "Save it as UTF-8")
            }
            files.append(SQLMigrationFile(url: url, version: version, name: name, sql: sql))
        }
        files.sort { $0.version < $1.version }
        for (earlier, later) in zip(files, files.dropFirst()) where earlier.version == later.version {
            throw failure(
                later.url, "has version \(later.version), as \(earlier.url.lastPathComponent) has",
                "Give one of them another version, or merge them")
        }
        return files
    }

    private static func parse(
        _ fileName: String, at url: URL, failure: (URL, String, String) -> SQLMigrationFileError
    ) throws -> (Version, String?) {
        let stem = String(fileName.dropLast(4))
        let rename = suggestedName(for: stem).map { "Rename it \($0)" } ?? "Rename it V<version>__<name>.sql, such as V1.1__add_guid.sql"
        guard fileName.hasSuffix(".sql"), stem.hasPrefix("V") else {
            throw failure(url, "is not named V<version>__<name>.sql", rename)
        }
        let parts = stem.dropFirst().components(separatedBy: "__")
        let name = parts.count > 1 ? parts.dropFirst().joined(separator: "__") : nil
        guard parts.count <= 2, let version = try? Version(parsing: parts[0]), name.map({ !$0.isEmpty }) ?? true else {
            throw failure(url, "is not named V<version>__<name>.sql", rename)
        }
        return (version, name?.replacingOccurrences(of: "_", with: " "))
    }

    /// The name a misnamed file probably meant (`v1.1_add guid.SQL` → `V1.1__add_guid.sql`), or
    /// `nil` when it has no version to start with.
    private static func suggestedName(for stem: String) -> String? {
        var rest = Substring(stem)
        if rest.first == "V" || rest.first == "v" { rest = rest.dropFirst() }
        var versionText = String(rest.prefix { $0.isASCII && ($0.isNumber || $0 == "." || $0 == "-") })
        rest = rest.dropFirst(versionText.count)
        while let last = versionText.last, last == "." || last == "-" { versionText.removeLast() }
        guard rest.isEmpty || rest.first == "_" || rest.first == " " || rest.first == "-",
              let version = try? Version(parsing: versionText) else { return nil }
        let words = rest.split { $0 == "_" || $0 == " " || $0 == "-" }
        return "V\(version)" + (words.isEmpty ? "" : "__" + words.joined(separator: "_")) + ".sql"
    }
}
