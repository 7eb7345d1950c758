#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import Foundation
import StoreMigrations

/// A connection to a SQLite database, as a migration body of a ``SQLiteStore`` receives it.
///
/// The body runs inside the store's transaction: everything it does is committed together with
/// the manager's new level, or rolled back if it throws.
///
/// ```swift
/// library.register("1.1") { db in
///     try db.execute("""
///         CREATE TABLE tag(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
///         INSERT INTO tag(name) SELECT DISTINCT category FROM event;
///         """)
///     let count = try db.scalar("SELECT count(*) FROM tag", as: Int.self) ?? 0
///     for row in try db.rows("SELECT id, name FROM tag WHERE name LIKE ?", arguments: ["%work%"]) {
///         let name: String = try row["name"]
///         …
///     }
/// }
/// ```
///
/// A connection is not thread-safe: use it only inside the body it was given to.
public final class Database {
    /// The path of the database file: for a new database built aside, the path it is linked to
    /// once created (see ``SQLiteStore``), which errors name.
    public let path: String
    let handle: OpaquePointer
    /// The context of the migration running on this connection, set by the store for the length
    /// of the body, so that long operations such as ``transformRows(in:columns:where:batchSize:_:)``
    /// report progress and notice cancellation without the body passing it along.
    package var context: MigrationContext?
    /// How many calls of ``denyingTransactionControl(_:)`` are running, since SQLite keeps one
    /// authorizer and a nested call must not remove the outer one's.
    private var transactionControlDenials = 0
    /// What the authorizer refuses besides transaction control, and what it last refused; the
    /// connection keeps it alive for SQLite, which holds it unretained.
    let authorizer = Authorizer()
    /// Set while a body runs in the store's transaction: see ``TransactionGuard``.
    /// Read as every statement finishes, hence exempt from dynamic exclusivity checks: a
    /// connection is used by one thread at a time.
    @exclusivity(unchecked) var transactionGuard: TransactionGuard?
    /// The busy handler's state; the connection keeps it alive for SQLite, which holds it unretained.
    let busyWait: BusyWait

    /// How a connection is opened.
    enum OpenMode {
        /// Creating the database if missing, with foreign keys enforced, switched to WAL when
        /// `switchingToWAL` (else left in its journal mode): for migrating.
        case migrating(switchingToWAL: Bool)
        /// An existing database only, as it is (no journal-mode switch), refusing writes
        /// (`query_only`): for planning. Opened read-write when the file allows it, because a
        /// read-only connection to a WAL database leaves its `-wal` and `-shm` files behind,
        /// while the last read-write connection to close removes them.
        case inspecting
        /// An existing database through a read-only connection, when the file is not writable.
        case readOnly
        /// An existing database opened `immutable`: no locks, no `-wal`, `-shm` or hot journal
        /// looked for; only for ``UnchangedFileRead``, which makes that safe.
        case immutable
    }

    /// Opens the database at `path` as `mode` says (creating it if missing and migrating, with
    /// foreign keys enforced).
    ///
    /// Opening reads the file's header, so a file that is not a database fails here with
    /// `SQLITE_NOTADB`, before anything is written to it. `linkedPath`, for a file written aside
    /// and linked into place when done, is the path the connection and its errors give.
    init(path: String, busyTimeout: TimeInterval, mode: OpenMode = .migrating(switchingToWAL: true), linkedPath: String? = nil) throws {
        var handle: OpaquePointer?
        let flags: Int32
        var filename = path
        let named = linkedPath ?? path
        switch mode {
        case .migrating: flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        case .inspecting: flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX
        case .readOnly: flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX
        case .immutable:
            flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX
            filename = UnchangedFileRead.immutableURI(path)
        }
        let status = sqlite3_open_v2(filename, &handle, flags, nil)
        guard status == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(status))
            sqlite3_close_v2(handle)
            throw SQLiteError(extendedCode: status, message: message, sql: nil, path: named)
        }
        self.handle = handle
        self.path = named
        busyWait = BusyWait(timeout: busyTimeout, path: named, connection: handle)
        sqlite3_extended_result_codes(handle, 1)
        installBusyHandler()
        switch mode {
        case .migrating(let switchingToWAL):
            if switchingToWAL { try switchToWAL(waitingAtMost: busyTimeout) }
            try execute("PRAGMA foreign_keys = ON")
        case .inspecting:
            try execute("PRAGMA query_only = ON")
        case .readOnly, .immutable:
            break
        }
    }

    /// Switches the database to WAL, waiting at most `timeout` seconds for other connections.
    ///
    /// On a new database the switch writes the header under an exclusive lock, and SQLite answers
    /// a connection that holds a shared lock while another waits for the exclusive one with
    /// `SQLITE_BUSY` at once, without calling the busy handler (waiting could deadlock). So
    /// processes opening a new database together failed; once the other connection is done, the
    /// switch goes through (or finds the database in WAL mode already).
    private func switchToWAL(waitingAtMost timeout: TimeInterval) throws {
        let deadline = ContinuousClock.now + .milliseconds(Int((max(0, timeout) * 1_000).rounded()))
        var pause = Duration.milliseconds(1)
        while true {
            do {
                try execute("PRAGMA journal_mode = WAL")
                return
            } catch let error as SQLiteError where error.code == SQLITE_BUSY && ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: pause.seconds)
                pause = min(pause * 2, .milliseconds(50))
            }
        }
    }

    deinit {
        // close_v2 waits for statements a body may have kept alive instead of failing.
        sqlite3_close_v2(handle)
    }

    // MARK: Running SQL

    /// Runs `sql`, which may hold several statements separated by semicolons.
    ///
    /// `arguments` fill the `?` parameters of the statements in order; each statement takes as
    /// many as it has parameters, and all must be used.
    ///
    /// ```swift
    /// try db.execute("UPDATE event SET title = ? WHERE id = ?", arguments: ["Launch", 42])
    /// ```
    ///
    /// - Throws: ``SQLiteError`` naming the statement that failed; the statements before it have
    ///   run (the store's transaction undoes them if the body lets the error through).
    public func execute(_ sql: String, arguments: [DatabaseValue] = []) throws {
        var remaining = arguments[...]
        try forEachStatement(in: sql) { statement, parameterCount in
            guard parameterCount <= remaining.count else {
                throw error(
                    code: SQLITE_RANGE,
                    message: "the statements need more than the \(arguments.count) arguments given",
                    sql: statement.sql)
            }
            try statement.execute(arguments: Array(remaining.prefix(parameterCount)))
            remaining = remaining.dropFirst(parameterCount)
        }
        guard remaining.isEmpty else {
            throw error(
                code: SQLITE_RANGE,
                message: "\(remaining.count) of the \(arguments.count) arguments were not used by any "
                    + "statement",
                sql: sql)
        }
    }

    /// Compiles one statement for running many times: see ``Statement``.
    public func prepare(_ sql: String) throws -> Statement {
        var statements: [Statement] = []
        try forEachStatement(in: sql) { statement, _ in statements.append(statement) }
        guard statements.count == 1, let statement = statements.first else {
            throw error(
                code: SQLITE_MISUSE,
                message: "a statement must hold exactly one SQL statement, not \(statements.count)",
                sql: sql)
        }
        return statement
    }

    /// Returns every row of the query `sql`.
    public func rows(_ sql: String, arguments: [DatabaseValue] = []) throws -> [Row] {
        try prepare(sql).rows(arguments: arguments)
    }

    /// Returns the first row of the query `sql`, or `nil` if it has none.
    public func row(_ sql: String, arguments: [DatabaseValue] = []) throws -> Row? {
        let statement = try prepare(sql)
        try statement.bind(arguments)
        defer { statement.reset() }
        return try statement.step()
    }

    /// Returns the first column of the first row of the query `sql` as `T`, or `nil` if there is
    /// no row or the value is `NULL`.
    ///
    /// ```swift
    /// let count = try db.scalar("SELECT count(*) FROM event", as: Int.self) ?? 0
    /// ```
    public func scalar<T: DatabaseValueConvertible>(
        _ sql: String, arguments: [DatabaseValue] = [], as type: T.Type = T.self
    ) throws -> T? {
        guard let row = try row(sql, arguments: arguments), !row.values.isEmpty else { return nil }
        return try row[0] as T?
    }

    /// Calls `body` with each row of the query `sql` in turn, without keeping them: for results
    /// too large to hold in memory. The body must not write to the tables it reads.
    public func forEachRow(
        _ sql: String, arguments: [DatabaseValue] = [], _ body: (Row) throws -> Void
    ) throws {
        try prepare(sql).forEachRow(arguments: arguments, body)
    }

    /// The rowid of the row most recently inserted on this connection.
    public var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// The number of rows the most recent `INSERT`, `UPDATE` or `DELETE` changed.
    public var changesCount: Int { Int(sqlite3_changes(handle)) }

    /// The text of one statement without the white space around it, for messages. Trims bytes
    /// directly: Foundation's trimming bridges through `NSString` on Linux, which costs more than
    /// compiling a short statement.
    static func trimmedText(_ bytes: UnsafeRawBufferPointer) -> String {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || (0x09...0x0D).contains(byte) }
        var start = bytes.startIndex, end = bytes.endIndex
        while start < end, isSpace(bytes[start]) { start += 1 }
        while end > start, isSpace(bytes[end - 1]) { end -= 1 }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
    }

    /// Compiles each statement of `sql` in turn and hands it to `body` with its parameter count.
    private func forEachStatement(in sql: String, _ body: (Statement, Int) throws -> Void) throws {
        try sql.withCString { start in
            var cursor = start
            while cursor.pointee != 0 {
                var statementHandle: OpaquePointer?
                var tail: UnsafePointer<CChar>?
                let status = sqlite3_prepare_v2(handle, cursor, -1, &statementHandle, &tail)
                let end = tail ?? cursor
                guard status == SQLITE_OK else {
                    sqlite3_finalize(statementHandle)
                    let text = Self.trimmedText(UnsafeRawBufferPointer(start: cursor, count: end - cursor))
                    throw error(status, sql: text.isEmpty ? sql : text)
                }
                // Only whitespace or comments were left.
                guard let statementHandle else { break }
                let statement = Statement(handle: statementHandle, database: self)
                try body(statement, Int(sqlite3_bind_parameter_count(statementHandle)))
                cursor = end
            }
        }
    }

    // MARK: Transactions and connection state

    /// Whether a transaction is open on the connection.
    var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Runs `body` inside a savepoint: its changes are kept if it returns and undone if it
    /// throws, without ending an enclosing transaction.
    func inSavepoint<T>(_ body: () throws -> T) throws -> T {
        let name = Self.quoted("store_migrations_\(UUID().uuidString)")
        try execute("SAVEPOINT \(name)")
        do {
            let result = try body()
            try execute("RELEASE \(name)")
            return result
        } catch {
            try? execute("ROLLBACK TO \(name)")
            try? execute("RELEASE \(name)")
            throw error
        }
    }

    /// Runs `body` while SQL that would begin, commit or roll back a transaction is refused with
    /// `SQLITE_AUTH`, so that a migration body cannot commit half of its step behind the store's
    /// back, and, when ``Authorizer/deniesSchemaChanges`` is set, SQL that would change the
    /// schema too. Savepoints stay allowed.
    func denyingTransactionControl<T>(_ body: () throws -> T) rethrows -> T {
        if transactionControlDenials == 0 {
            sqlite3_set_authorizer(handle, { state, action, _, _, _, _ in
                let authorizer = Unmanaged<Authorizer>.fromOpaque(state!).takeUnretainedValue()
                guard action == SQLITE_TRANSACTION || (authorizer.deniesSchemaChanges && Authorizer.changesSchema(action)) else {
                    return SQLITE_OK
                }
                authorizer.denied = action
                return SQLITE_DENY
            }, Unmanaged.passUnretained(authorizer).toOpaque())
        }
        transactionControlDenials += 1
        defer {
            transactionControlDenials -= 1
            if transactionControlDenials == 0 { sqlite3_set_authorizer(handle, nil, nil) }
        }
        return try body()
    }

    /// Reads a boolean pragma such as `foreign_keys`.
    func pragmaFlag(_ name: String) throws -> Bool {
        try scalar("PRAGMA \(name)", as: Bool.self) ?? false
    }

    /// Sets a boolean pragma such as `foreign_keys`.
    func setPragmaFlag(_ name: String, _ value: Bool) throws {
        try execute("PRAGMA \(name) = \(value ? "ON" : "OFF")")
    }

    // MARK: Errors and quoting

    /// The error SQLite reports for `status`, with its message and the statement.
    func error(_ status: Int32, sql: String?) -> SQLiteError {
        let circumstance: SQLiteError.Circumstance?
        switch status & 0xFF {
        case SQLITE_READONLY where status == SQLITE_READONLY && sqlite3_db_readonly(handle, "main") == 0: circumstance = .queryOnly
        case SQLITE_CONSTRAINT where transactionGuard != nil && !isInTransaction: circumstance = .rolledBackTransaction
        default: circumstance = nil
        }
        let holder = status & 0xFF == SQLITE_BUSY ? busyWait.takeHolder() : nil
        return SQLiteError(
            extendedCode: status, message: String(cString: sqlite3_errmsg(handle)), sql: sql, path: path,
            circumstance: circumstance, holderProcessID: holder?.processID, holderIsReader: holder?.isReader ?? false)
    }

    /// An error this wrapper reports on SQLite's behalf, with SQLite's code for its kind.
    func error(code: Int32, message: String, sql: String?) -> SQLiteError {
        SQLiteError(extendedCode: code, message: message, sql: sql, path: path)
    }

    /// `identifier` quoted for SQL: `my "table"` becomes `"my ""table"""`.
    static func quoted(_ identifier: String) -> String {
        var sql = SQLText()
        sql.appendQuoted(identifier)
        return sql.text
    }
}

extension Database: MigrationContextCarrier {}

/// The state of a connection's authorizer, which SQLite's C callback reaches through its
/// context pointer.
final class Authorizer {
    /// Whether statements that change the schema are refused (a batch of a resumable migration).
    var deniesSchemaChanges = false
    /// The action last refused, if any.
    var denied: Int32?

    /// Whether `action` creates, drops or alters a schema object other than a temporary one.
    static func changesSchema(_ action: Int32) -> Bool {
        switch action {
        case SQLITE_CREATE_INDEX, SQLITE_CREATE_TABLE, SQLITE_CREATE_TRIGGER, SQLITE_CREATE_VIEW, SQLITE_CREATE_VTABLE,
             SQLITE_DROP_INDEX, SQLITE_DROP_TABLE, SQLITE_DROP_TRIGGER, SQLITE_DROP_VIEW, SQLITE_DROP_VTABLE,
             SQLITE_ALTER_TABLE:
            return true
        default:
            return false
        }
    }
}
