#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import StoreMigrations

/// Where an ``EntityMapping`` writes the rows a source row becomes, during one
/// ``Database/migrateSchema(to:dataLoss:mappings:)``.
///
/// Inserts are prepared once per table and set of columns and reused for every row. The
/// destination also keeps, for the length of the migration, the rows ``insertOnce(into:key:_:)``
/// created, so that many source rows can share one destination row, as the guide's migration
/// policy keeps the categories it has already created in a dictionary.
public final class MappingDestination {
    private let database: Database
    /// The prepared inserts; a mapping writes few shapes of rows, so a list is quick to search.
    private var inserts: [PreparedInsert] = []
    /// The insert used last, tried first: a mapping usually writes the same rows in turn.
    private var lastInsert: PreparedInsert?
    /// The rowids of the rows ``insertOnce(into:key:_:)`` created, by lowercased table, then key.
    private var created: [String: [DatabaseValue: Int64]] = [:]
    /// In a resumable schema migration, the table that also keeps those rowids, written with the
    /// batch that created them: a kill forgets the dictionary, and a key seen by an earlier
    /// batch must not create its row again.
    private let keyTable: String?
    private var findKey: Statement?
    private var keepKey: Statement?

    init(database: Database, keyTable: String? = nil) {
        self.database = database
        self.keyTable = keyTable
    }

    /// Creates the table a resumable schema migration keeps ``insertOnce(into:key:_:)``'s rows
    /// in. Its key column has no type, so that values keep theirs: `1` and `'1'` stay two keys.
    static func createKeyTable(_ name: String, in database: Database) throws {
        try database.execute(
            "CREATE TABLE \(Database.quoted(name)) (tbl TEXT NOT NULL, key, row INTEGER NOT NULL, PRIMARY KEY (tbl, key))")
    }

    /// Inserts a row into `table` and returns its rowid.
    ///
    /// ```swift
    /// let notaID = try destination.insert(into: "nota", ["id": nota["id"], "texto": nota["texto"]])
    /// ```
    ///
    /// Columns left out take their default.
    ///
    /// - Throws: ``SQLiteError`` if the table or a column does not exist, or a constraint fails.
    @discardableResult
    public func insert(into table: String, _ values: KeyValuePairs<String, DatabaseValue>) throws -> Int64 {
        try insertStatement(binding: values, into: table).run()
        return database.lastInsertedRowID
    }

    /// Inserts a row into `table` the first time `key` is given for it during this migration,
    /// and returns that row's rowid every time: to create one row per distinct value, such as one
    /// category per name.
    ///
    /// ```swift
    /// let categoriaID = try destination.insertOnce(
    ///     into: "categoria", key: .text(nombre), ["nombre": .text(nombre)])
    /// ```
    ///
    /// Only rows inserted this way in this migration are remembered, one entry per distinct key.
    @discardableResult
    public func insertOnce(
        into table: String, key: DatabaseValue, _ values: KeyValuePairs<String, DatabaseValue>
    ) throws -> Int64 {
        let lowered = table.lowercased()
        if let rowID = created[lowered]?[key] { return rowID }
        if let keyTable, let rowID = try keptRowID(of: key, in: lowered, keyTable: keyTable) {
            created[lowered, default: [:]][key] = rowID
            return rowID
        }
        let rowID = try insert(into: table, values)
        created[lowered, default: [:]][key] = rowID
        if let keyTable {
            if keepKey == nil {
                keepKey = try database.prepare("INSERT INTO \(Database.quoted(keyTable)) (tbl, key, row) VALUES (?, ?, ?)")
            }
            try keepKey?.execute(arguments: [.text(lowered), key, .integer(rowID)])
        }
        return rowID
    }

    /// The rowid an earlier batch kept for `key` in `table`, if any.
    private func keptRowID(of key: DatabaseValue, in table: String, keyTable: String) throws -> Int64? {
        if findKey == nil {
            findKey = try database.prepare("SELECT row FROM \(Database.quoted(keyTable)) WHERE tbl = ? AND key IS ?")
        }
        guard let row = try findKey?.rows(arguments: [.text(table), key]).first else { return nil }
        return try row[0] as Int64
    }

    /// The insert of `values` into `table`, prepared once, with `values` bound.
    private func insertStatement(binding values: KeyValuePairs<String, DatabaseValue>, into table: String) throws -> PreparedInsert {
        // Mappings usually insert the same columns row after row: binding checks the columns as
        // it goes, so the last insert is tried first, without a search.
        if let last = lastInsert, try last.bind(values, into: table) { return last }
        for prepared in inserts {
            if try prepared.bind(values, into: table) {
                lastInsert = prepared
                return prepared
            }
        }
        let columns = values.map { $0.key }
        let statement = try database.prepare(
            "INSERT INTO \(Database.quoted(table)) "
                + (columns.isEmpty
                    ? "DEFAULT VALUES"
                    : "(\(columns.map(Database.quoted).joined(separator: ", "))) "
                        + "VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))"))
        let prepared = PreparedInsert(table: table, columns: columns, statement: statement, database: database)
        _ = try prepared.bind(values, into: table)
        inserts.append(prepared)
        lastInsert = prepared
        return prepared
    }

    /// An `INSERT` prepared for one table and list of columns.
    private final class PreparedInsert {
        let table: String
        let columns: [String]
        let statement: Statement
        let database: Database

        init(table: String, columns: [String], statement: Statement, database: Database) {
            self.table = table
            self.columns = columns
            self.statement = statement
            self.database = database
        }

        /// Binds `values` if the statement inserts them into `table` (the same columns in the
        /// same order), checking the names as it goes; returns whether it does.
        func bind(_ values: KeyValuePairs<String, DatabaseValue>, into table: String) throws -> Bool {
            guard self.table == table, columns.count == values.count else { return false }
            for index in values.indices {
                let (column, value) = values[index]
                guard columns[index] == column else { return false }
                let status = statement.bind(value, at: Int32(index + 1))
                guard status == SQLITE_OK else { throw database.error(status, sql: statement.sql) }
            }
            return true
        }

        /// Runs the bound insert, then resets it for the next row.
        func run() throws {
            defer { statement.reset() }
            while try statement.step() != nil {}
        }
    }
}
