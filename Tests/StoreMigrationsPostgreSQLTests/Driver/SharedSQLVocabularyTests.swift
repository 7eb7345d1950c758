import Foundation
import Testing
import StoreMigrations
import StoreMigrationsPostgreSQL
import StoreMigrationsSQLite
import TestSupport

/// The operations SQLite's `Database` and PostgreSQL's connection share, by the same names and
/// argument labels. Each connection conforms with an empty extension: a name or a label that
/// differs fails the build, and the same generic code then runs on both.
protocol SharedSQLVocabulary {
    associatedtype Value: ExpressibleByIntegerLiteral & ExpressibleByStringLiteral & Equatable
    associatedtype ResultRow: SharedRowVocabulary where ResultRow.Value == Value
    associatedtype PreparedStatement: SharedStatementVocabulary
        where PreparedStatement.Value == Value, PreparedStatement.ResultRow == ResultRow
    associatedtype ExecuteResult
    func execute(_ sql: String, arguments: [Value]) throws -> ExecuteResult
    func rows(_ sql: String, arguments: [Value]) throws -> [ResultRow]
    func prepare(_ sql: String) throws -> PreparedStatement
    func tableExists(_ name: String) throws -> Bool
}

/// A prepared statement's share of the vocabulary.
protocol SharedStatementVocabulary {
    associatedtype Value
    associatedtype ResultRow
    associatedtype ExecuteResult
    func execute(arguments: [Value]) throws -> ExecuteResult
    func rows(arguments: [Value]) throws -> [ResultRow]
}

/// A row's share of the vocabulary.
protocol SharedRowVocabulary {
    associatedtype Value
    var columnNames: [String] { get }
    var values: [Value] { get }
}

extension Database: SharedSQLVocabulary {}
extension Statement: SharedStatementVocabulary {}
extension Row: SharedRowVocabulary {}
extension PostgreSQLConnection: SharedSQLVocabulary {}
extension PostgreSQLStatement: SharedStatementVocabulary {}
extension PostgreSQLRow: SharedRowVocabulary {}

@Suite struct SharedSQLVocabularyTests {
    /// Writes and reads rows through every shared operation; `first` and `second` are the
    /// connection's placeholders for the first and second argument.
    static func roundTrip<Connection: SharedSQLVocabulary>(
        _ db: Connection, first: String, second: String
    ) throws -> (columns: [String], rows: [[Connection.Value]], prepared: [[Connection.Value]], exists: Bool) {
        _ = try db.execute("CREATE TABLE vocabulary(id bigint PRIMARY KEY, name text NOT NULL)", arguments: [])
        let insert = try db.prepare("INSERT INTO vocabulary(id, name) VALUES (\(first), \(second))")
        _ = try insert.execute(arguments: [1, "one"])
        _ = try insert.execute(arguments: [2, "two"])
        _ = try db.execute("UPDATE vocabulary SET name = \(first) WHERE id = \(second)", arguments: ["deux", 2])
        let rows = try db.rows("SELECT id, name FROM vocabulary WHERE id >= \(first) ORDER BY id", arguments: [1])
        let prepared = try db.prepare("SELECT id, name FROM vocabulary WHERE id = \(first)").rows(arguments: [2])
        return (rows.first?.columnNames ?? [], rows.map(\.values), prepared.map(\.values), try db.tableExists("vocabulary"))
    }

    @Test func sqliteAndPostgreSQLRunTheSameCallsAlike() throws {
        let folder = try TemporaryFolder()
        let sqlite = try SQLiteStore(url: folder.file("vocabulary.sqlite")).write { db in
            try Self.roundTrip(db, first: "?", second: "?")
        }
        #expect(sqlite.columns == ["id", "name"])
        #expect(sqlite.rows == [[1, "one"], [2, "deux"]])
        #expect(sqlite.prepared == [[2, "deux"]])
        #expect(sqlite.exists)

        let postgreSQL = try Self.roundTrip(try PostgreSQLTestDatabase().connect(), first: "$1", second: "$2")
        #expect(postgreSQL.columns == ["id", "name"])
        #expect(postgreSQL.rows == [[1, "one"], [2, "deux"]])
        #expect(postgreSQL.prepared == [[2, "deux"]])
        #expect(postgreSQL.exists)
    }
}
