#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import StoreMigrations

/// The connection the record tables are written through for one write of records: each distinct
/// statement is compiled once and run again with new arguments, since a squash or a creation from
/// the declared schema records hundreds of migrations with the same `INSERT`.
final class RecordStatementCache: SQLRecordConnection {
    private let db: Database
    private var statements: [String: Statement] = [:]
    /// The statement run last: rows of one kind come in a run, with one string whose storage
    /// compares equal at once, where the dictionary would hash the whole text for each row.
    private var last: (sql: String, statement: Statement)?

    init(_ db: Database) {
        self.db = db
    }

    func executeRecordStatement(_ sql: String, _ arguments: [SQLRecordValue]) throws {
        let statement: Statement
        if let last, last.sql == sql {
            statement = last.statement
        } else if let compiled = statements[sql] {
            statement = compiled
        } else {
            statement = try db.prepare(sql)
            statements[sql] = statement
        }
        last = (sql, statement)
        let expected = statement.resetForBinding()
        guard arguments.count == expected else {
            throw db.error(
                code: SQLITE_RANGE, message: "the statement has \(expected) parameters but \(arguments.count) arguments were given",
                sql: sql)
        }
        try arguments.withUnsafeBufferPointer { try bindAndRun(statement, $0, from: 0) }
    }

    /// Binds `arguments` from `index` on, each text where it lies (no copy: the history's rows
    /// are hundreds when a store is created from its declared schema), and runs the statement
    /// with every text still held: SQLite reads the bound bytes only while it runs.
    private func bindAndRun(_ statement: Statement, _ arguments: UnsafeBufferPointer<SQLRecordValue>, from index: Int) throws {
        guard index < arguments.count else {
            defer { statement.reset() }
            while try statement.step() != nil {}
            return
        }
        let status: Int32
        switch arguments[index] {
        case .text(var text):
            return try text.withUTF8 { bytes in
                let status = statement.bindBorrowedText(bytes, at: Int32(index + 1))
                guard status == SQLITE_OK else { throw db.error(status, sql: statement.sql) }
                try bindAndRun(statement, arguments, from: index + 1)
            }
        case .real(let number): status = statement.bind(.real(number), at: Int32(index + 1))
        case .null: status = statement.bind(.null, at: Int32(index + 1))
        }
        guard status == SQLITE_OK else { throw db.error(status, sql: statement.sql) }
        try bindAndRun(statement, arguments, from: index + 1)
    }
}
