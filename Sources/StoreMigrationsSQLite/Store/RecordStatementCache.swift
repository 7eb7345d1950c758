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
        try statement.execute(arguments: arguments.map { value in
            switch value {
            case .text(let text): return .text(text)
            case .real(let number): return .real(number)
            case .null: return .null
            }
        })
    }
}
