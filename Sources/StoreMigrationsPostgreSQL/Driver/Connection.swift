import CLibPQ
import Foundation
import StoreMigrations

/// A connection to a PostgreSQL database through libpq: what a ``PostgreSQLStore``'s migration
/// bodies receive.
///
/// ```swift
/// service.register("1.1") { db in
///     try db.execute("ALTER TABLE account ADD COLUMN email_verified bool NOT NULL DEFAULT false")
///     try db.execute(
///         "UPDATE account SET email_verified = true WHERE legacy_flags & $1 <> 0", arguments: [4])
///     let unverified: Int = try db.scalar(
///         "SELECT count(*) FROM account WHERE NOT email_verified") ?? 0
/// }
/// ```
///
/// Inside a transactional step every statement runs in the step's transaction: a body that
/// throws (or whose statement fails) rolls back everything it did, schema changes included. A
/// body must not end that transaction itself (`COMMIT`, `ROLLBACK`): the step then fails with
/// ``PostgreSQLError/Kind-swift.enum/misuse``. Statements that refuse to run in a transaction
/// (`CREATE INDEX CONCURRENTLY`, `VACUUM`) belong to steps registered with
/// ``/StoreMigrations/TransactionMode/none``.
///
/// Parameters are written `$1`, `$2`, … and passed as ``PostgreSQLValue``s (literals work).
/// Every error is a ``PostgreSQLError`` with the server's SQLSTATE, message, detail and hint,
/// the statement and the store. A connection is used by one thread at a time: the store's.
public final class PostgreSQLConnection {
    /// libpq's `PGconn *`.
    let handle: OpaquePointer
    /// The store, for errors.
    let store: String
    /// The context of the step running on the connection, set by the coordinator.
    package var context: MigrationContext?
    /// Whether the store's record tables are known to exist, so a step need not create them.
    var storeTablesExist = false
    /// Names of prepared statements released while they could not be deallocated at once.
    var staleStatements: [String] = []
    /// What the store checks about the statements of the step body running on the connection;
    /// `nil` outside transactional bodies.
    var statementGuard: StatementGuard?
    /// The session's temporary objects (`catalog:oid`) the statement guard has seen: dropping
    /// one of them in a batch is no schema change.
    var temporaryObjects: Set<String> = []
    private var nextStatement = 0
    private var nextCursor = 0

    /// Opens a connection with libpq's keyword/value pairs.
    init(parameters: [(String, String)], store: String) throws {
        self.store = store
        let keywords = parameters.map { strdup($0.0) } + [nil]
        let values = parameters.map { strdup($0.1) } + [nil]
        defer {
            keywords.forEach { free($0) }
            values.forEach { free($0) }
        }
        let connection = keywords.map { UnsafePointer($0) }.withUnsafeBufferPointer { keywordPointers in
            values.map { UnsafePointer($0) }.withUnsafeBufferPointer { valuePointers in
                PQconnectdbParams(keywordPointers.baseAddress, valuePointers.baseAddress, 0)
            }
        }
        guard let connection else {
            throw PostgreSQLError(kind: .connectionFailed, message: "libpq could not allocate a connection", store: store)
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.connectionMessage(String(cString: PQerrorMessage(connection)))
            PQfinish(connection)
            if Self.isRefusedOption(message) {
                throw PostgreSQLError(kind: .invalidConnectionString, message: message, store: store)
            }
            throw PostgreSQLError(
                kind: .connectionFailed, sqlState: Self.connectionSQLState(message), message: message, store: store)
        }
        handle = connection
        // The server's notices (`… already exists, skipping`) are not this library's output.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
    }

    deinit {
        PQfinish(handle)
    }

    /// The server process serving this connection (`pg_backend_pid()`), as `pg_locks` and
    /// `pg_stat_activity` name it.
    package var serverProcessID: Int32 { PQbackendPID(handle) }

    /// The server's version as an integer: `150004` for 15.4.
    var serverVersion: Int { Int(PQserverVersion(handle)) }

    /// Whether a transaction is open on the connection (a transactional step's, or the body's own
    /// in a non-transactional step).
    var isInTransaction: Bool {
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR || status == PQTRANS_ACTIVE
    }

    var transactionStatus: PGTransactionStatusType { PQtransactionStatus(handle) }

    var isBroken: Bool { PQstatus(handle) != CONNECTION_OK }

    // MARK: Statements

    /// Runs `sql`, which may hold several statements separated by semicolons, without parameters.
    ///
    /// ```swift
    /// try db.execute("""
    ///     CREATE TABLE tag(id bigserial PRIMARY KEY, name text NOT NULL UNIQUE);
    ///     ALTER TABLE note ADD COLUMN tag_id bigint REFERENCES tag(id);
    ///     """)
    /// ```
    public func execute(_ sql: String) throws {
        guard statementGuard != nil else { return try check(PQexec(handle, sql), sql: sql) }
        // `PQexec` returns the last statement's result only; the guard reads every one's tag.
        try guarded(sql) { _ = try queryEach(sql, guarding: true) }
    }

    /// Runs one statement whose parameters `$1`, `$2`, … take `arguments` in order, and returns
    /// the number of rows it inserted, updated or deleted (0 for other statements).
    ///
    /// ```swift
    /// let archived = try db.execute(
    ///     "UPDATE note SET archived = true WHERE updated_at < $1", arguments: ["2020-01-01"])
    /// ```
    @discardableResult
    public func execute(_ sql: String, arguments: [PostgreSQLValue]) throws -> Int {
        try guarded(sql) {
            try withParameters(arguments) { count, types, values in
                try check(PQexecParams(handle, sql, count, types, values, nil, nil, 0), sql: sql) { Self.affectedRows($0) }
            }
        }
    }

    /// Returns every row of the query `sql`, whose parameters `$1`, `$2`, … take `arguments`.
    ///
    /// ```swift
    /// for row in try db.rows("SELECT id, title FROM note WHERE owner = $1", arguments: [ownerID]) {
    ///     print(try row["id"] as Int, try row["title"] as String)
    /// }
    /// ```
    public func rows(_ sql: String, arguments: [PostgreSQLValue] = []) throws -> [PostgreSQLRow] {
        try guarded(sql) {
            try withParameters(arguments) { count, types, values in
                try check(PQexecParams(handle, sql, count, types, values, nil, nil, 0), sql: sql) { rows(of: $0, sql: sql) }
            }
        }
    }

    /// The first column of the first row of a query, converted to `T`, or `nil` when there is no
    /// row or the value is `NULL`.
    ///
    /// ```swift
    /// let count: Int = try db.scalar("SELECT count(*) FROM note") ?? 0
    /// ```
    public func scalar<T: PostgreSQLValueConvertible>(
        _ sql: String, arguments: [PostgreSQLValue] = [], as type: T.Type = T.self
    ) throws -> T? {
        guard let row = try rows(sql, arguments: arguments).first else { return nil }
        let value: T? = try row[0]
        return value
    }

    /// Compiles `sql` once on the server, to run it many times with different parameters.
    ///
    /// ```swift
    /// let insert = try db.prepare("INSERT INTO tag(name) VALUES ($1) ON CONFLICT DO NOTHING")
    /// for name in names { try insert.execute(arguments: [.text(name)]) }
    /// ```
    public func prepare(_ sql: String) throws -> PostgreSQLStatement {
        nextStatement += 1
        let name = "store_migrations_\(nextStatement)"
        try statementGuard?.checkOpen()
        try check(PQprepare(handle, name, sql, 0, nil), sql: sql)
        return PostgreSQLStatement(connection: self, name: name, sql: sql)
    }

    /// Whether a table (or view) exists; `name` may be schema-qualified.
    public func tableExists(_ name: String) throws -> Bool {
        try scalar("SELECT to_regclass($1) IS NOT NULL", arguments: [.text(name)], as: Bool.self) ?? false
    }

    /// `identifier` quoted for SQL: `my "table"` becomes `"my ""table"""`.
    public static func quoted(_ identifier: String) -> String {
        "\"" + identifier.escapingASCII("\"", with: "\"") + "\""
    }

    // MARK: Internals shared by statements, cursors, COPY and the store

    /// Runs several statements in one round trip and returns each one's rows, in order; with
    /// `guarding`, shows each result to the statement guard.
    func queryEach(_ sql: String, guarding: Bool = false) throws -> [[PostgreSQLRow]] {
        guard PQsendQuery(handle, sql) == 1 else { throw error(result: nil, sql: sql) }
        var results: [[PostgreSQLRow]] = []
        var failure: PostgreSQLError?
        while let result = PQgetResult(handle) {
            defer { PQclear(result) }
            let status = PQresultStatus(result)
            if status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK || status == PGRES_EMPTY_QUERY {
                if guarding { statementGuard?.noteResult(result, sql: sql) }
                results.append(rows(of: result, sql: sql))
            } else if failure == nil {
                failure = error(result: result, sql: sql)
            }
        }
        if let failure { throw failure }
        return results
    }

    /// Checks a result, clears it, and returns what `read` makes of it.
    @discardableResult
    func check<R>(_ result: OpaquePointer?, sql: String?, _ read: (OpaquePointer) -> R = { _ in () }) throws -> R {
        guard let result else { throw error(result: nil, sql: sql) }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY else {
            throw error(result: result, sql: sql)
        }
        statementGuard?.noteResult(result, sql: sql)
        return read(result)
    }

    /// The error a failed result (or, without one, the connection) reports.
    func error(result: OpaquePointer?, sql: String?) -> PostgreSQLError {
        func field(_ code: UInt8) -> String? {
            guard let result, let value = PQresultErrorField(result, Int32(code)) else { return nil }
            return String(cString: value)
        }
        let message = field(UInt8(ascii: "M")) ?? Self.trimmed(String(cString: PQerrorMessage(handle)))
        // When the server ends the session, libpq keeps its last words as text only.
        let sqlState = field(UInt8(ascii: "C")) ?? Self.connectionSQLState(message)
        // Admin shutdown, crash shutdown, cannot connect now, and a broken socket all end the
        // session: the server rolled the transaction back.
        let lost = isBroken || sqlState.map { $0.hasPrefix("08") || $0 == "57P01" || $0 == "57P02" || $0 == "57P03" } ?? false
        return PostgreSQLError(
            kind: lost ? .connectionLost : .statementFailed, sqlState: sqlState, message: message,
            detail: field(UInt8(ascii: "D")), hint: field(UInt8(ascii: "H")), sql: sql, store: store)
    }

    /// An error this wrapper reports on its own.
    func misuse(_ message: String, sql: String? = nil) -> PostgreSQLError {
        PostgreSQLError(kind: .misuse, message: message, sql: sql, store: store)
    }

    /// The rows of a result.
    func rows(of result: OpaquePointer, sql: String) -> [PostgreSQLRow] {
        let rowCount = PQntuples(result), columnCount = PQnfields(result)
        guard rowCount > 0 else { return [] }
        let layout = PostgreSQLRow.Layout(
            names: (0..<columnCount).map { String(cString: PQfname(result, $0)) }, sql: sql, store: store)
        let types = (0..<columnCount).map { PQftype(result, $0) }
        var rows: [PostgreSQLRow] = []
        rows.reserveCapacity(Int(rowCount))
        for row in 0..<rowCount {
            var values: [PostgreSQLValue] = []
            values.reserveCapacity(Int(columnCount))
            for column in 0..<columnCount {
                if PQgetisnull(result, row, column) == 1 {
                    values.append(.null)
                } else {
                    values.append(PostgreSQLValue(
                        text: PQgetvalue(result, row, column), length: Int(PQgetlength(result, row, column)),
                        type: types[Int(column)]))
                }
            }
            rows.append(PostgreSQLRow(values: values, layout: layout))
        }
        return rows
    }

    /// A name for a new server-side cursor.
    func makeCursorName() -> String {
        nextCursor += 1
        return "store_migrations_cursor_\(nextCursor)"
    }

    /// Deallocates prepared statements released while the transaction had failed.
    func deallocateStaleStatements() {
        guard !staleStatements.isEmpty, transactionStatus == PQTRANS_IDLE else { return }
        for name in staleStatements { PQclear(PQexec(handle, "DEALLOCATE \(name)")) }
        staleStatements.removeAll()
    }

    /// Calls `body` with `parameters` laid out as libpq wants them: a count, type OIDs and
    /// NUL-terminated texts (`nil` for `NULL`). The texts are written one after the other into
    /// one temporary buffer, and the two arrays are temporary too (on the stack when small): a row
    /// transform passes parameters for every row, and allocating a `String`, a `strdup` and three
    /// arrays per call would cost it more than libpq's `PQexecPrepared` itself.
    func withParameters<R>(
        _ parameters: [PostgreSQLValue],
        _ body: (Int32, UnsafePointer<Oid>?, UnsafePointer<UnsafePointer<CChar>?>?) throws -> R
    ) throws -> R {
        if parameters.isEmpty { return try body(0, nil, nil) }
        var capacity = 0
        for parameter in parameters { capacity += parameter.textCapacity }
        return try withUnsafeTemporaryAllocation(of: CChar.self, capacity: max(capacity, 1)) { texts in
            try withUnsafeTemporaryAllocation(of: UnsafePointer<CChar>?.self, capacity: parameters.count) { values in
                try withUnsafeTemporaryAllocation(of: Oid.self, capacity: parameters.count) { types in
                    var next = texts.baseAddress!
                    for (index, parameter) in parameters.enumerated() {
                        types[index] = parameter.parameterType
                        values[index] = parameter.writeText(to: &next)
                    }
                    return try body(Int32(parameters.count), UnsafePointer(types.baseAddress), UnsafePointer(values.baseAddress))
                }
            }
        }
    }

    /// The row count of an `INSERT`, `UPDATE`, `DELETE` or `COPY` result, 0 for other statements;
    /// read in place, without a `String` per statement.
    static func affectedRows(_ result: OpaquePointer) -> Int {
        guard let text = PQcmdTuples(result) else { return 0 }
        return Int(strtoll(text, nil, 10))
    }

    static func trimmed(_ message: String) -> String {
        message.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// libpq's account of a failed connection as one sentence: its tab-indented hint lines ("Is
    /// the server running …?") dropped, since the error's action gives the advice, and the
    /// server's "FATAL:  " prefix dropped; attempts at several hosts stay, joined by semicolons.
    static func connectionMessage(_ message: String) -> String {
        message.split(whereSeparator: \.isNewline)
            .filter { !$0.hasPrefix("\t") }
            .map { $0.replacingOccurrences(of: "FATAL:  ", with: "").trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
            .joined(separator: "; ")
    }

    /// Whether libpq refused an option's value before reaching any server (`invalid sslmode
    /// value: "bogus"`, `invalid integer value "abc" for connection option "port"`, `invalid port
    /// number`): the connection string is wrong, not the server or the network.
    static func isRefusedOption(_ message: String) -> Bool {
        message.hasPrefix("invalid ") && (message.contains(" value") || message.contains("port number"))
    }

    /// libpq reports a refused login, and a session the server ended, as text only: the
    /// SQLSTATEs of those a store most often meets, read from the server's message.
    static func connectionSQLState(_ message: String) -> String? {
        if message.contains("password authentication failed") || message.contains("no password supplied") { return "28P01" }
        if message.contains("does not exist") && message.contains("database") { return "3D000" }
        if message.contains("no pg_hba.conf entry") || (message.contains("role \"") && message.contains("does not exist")) {
            return "28000"
        }
        if message.contains("terminating connection due to administrator command") { return "57P01" }
        if message.contains("the database system is shutting down") || message.contains("the database system is starting up") {
            return "57P03"
        }
        return nil
    }
}

extension PostgreSQLConnection: MigrationContextCarrier {}