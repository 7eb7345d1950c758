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
///
/// A file runs in the store's transaction, with its record. One whose statements a transaction
/// refuses (SQLite's `VACUUM`, PostgreSQL's `CREATE INDEX CONCURRENTLY`) says so in a directive,
/// a comment line above its first statement, and runs as ``TransactionMode/none`` (at least once,
/// so write it to be repeatable):
///
/// ```sql
/// -- store-migrations: no-transaction
/// CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_by_customer ON orders(customer_id);
/// ```
///
/// The directive is part of the text, so adding it to an applied file is an edit the plan
/// reports. Other comment and blank lines may come before it; a directive the library does not
/// know (`no-transacton`), one below the first statement, or sqlx's spelling `-- no-transaction`
/// is a ``SQLMigrationFileError``. PostgreSQL runs a text of several statements as one implicit
/// transaction, which `CREATE INDEX CONCURRENTLY` refuses: give each such statement a file.
public struct SQLMigrationFile: Sendable, Hashable {
    /// Where the file is.
    public let url: URL
    /// The migration's version, from the file's name.
    public let version: Version
    /// The migration's name, from the file's name: its underscores read as spaces.
    public let name: String?
    /// The file's text.
    public let sql: String
    /// How the migration runs: ``TransactionMode/none`` when a directive says
    /// `-- store-migrations: no-transaction`.
    public let transaction: TransactionMode

    /// The files of `folder` that are migrations, ascending by version.
    ///
    /// - Throws: ``SQLMigrationFileError`` for a folder that cannot be read, a `.sql` file whose
    ///   name is not a migration's, whose text is not UTF-8 or has a directive the library does
    ///   not read, or two files of one version.
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
            let transaction = try transactionMode(of: sql, at: url, failure: failure)
            files.append(SQLMigrationFile(url: url, version: version, name: name, sql: sql, transaction: transaction))
        }
        files.sort { $0.version < $1.version }
        for (earlier, later) in zip(files, files.dropFirst()) where earlier.version == later.version {
            throw failure(
                later.url, "has version \(later.version), as \(earlier.url.lastPathComponent) has",
                "Give one of them another version, or merge them")
        }
        return files
    }

    /// What a directive starts with, after `--`.
    static let directivePrefix = "store-migrations:"

    /// The mode the directives of `sql` ask for: comment lines `-- store-migrations: …` above the
    /// first statement (a licence in a `/* … */` block may come first). A directive elsewhere
    /// would be silently ignored, hence an error, as is sqlx's `-- no-transaction`, which someone
    /// used to sqlx expects to work.
    private static func transactionMode(
        of sql: String, at url: URL, failure: (URL, String, String) -> SQLMigrationFileError
    ) throws -> TransactionMode {
        let spelled = "-- \(directivePrefix) no-transaction"
        var mode = TransactionMode.transactional
        var isAboveStatements = true
        var isInBlockComment = false
        for (index, line) in sql.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            var text = line.trimmingCharacters(in: CharacterSet.whitespacesAndNewlines.union(["\u{FEFF}"]))
            if isAboveStatements, isInBlockComment || text.hasPrefix("/*") {
                guard let end = text.range(of: "*/") else {
                    isInBlockComment = true
                    continue
                }
                isInBlockComment = false
                text = text[end.upperBound...].trimmingCharacters(in: .whitespaces)
            }
            if text.isEmpty { continue }
            guard text.hasPrefix("--") else {
                isAboveStatements = false
                continue
            }
            let comment = text.dropFirst(2).trimmingCharacters(in: .whitespaces)
            let lineNumber = index + 1
            guard comment.lowercased().hasPrefix(directivePrefix) else {
                if isAboveStatements && comment.lowercased() == "no-transaction" {
                    throw failure(url, "has sqlx's directive \"\(text)\" in line \(lineNumber), which this library does not read",
                                  "Write \(spelled) instead")
                }
                continue
            }
            guard isAboveStatements else {
                throw failure(url, "has the directive \"\(text)\" in line \(lineNumber), below its first statement",
                              "Move it above the first statement")
            }
            let directive = comment.dropFirst(directivePrefix.count).trimmingCharacters(in: .whitespaces)
            guard directive.lowercased() == "no-transaction" else {
                throw failure(url, "has the unknown directive \"\(directive)\" in line \(lineNumber)",
                              "Write \(spelled), the only directive there is")
            }
            mode = .none
        }
        return mode
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
