#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import Foundation
import StoreMigrations

/// A compiled SQL statement, to run many times with different arguments without compiling it
/// again: the way to write rows in a loop.
///
/// ```swift
/// let insert = try db.prepare("INSERT INTO tag(event_id, name) VALUES (?, ?)")
/// for (eventID, name) in tags {
///     try insert.execute(arguments: [.integer(eventID), .text(name)])
/// }
/// ```
///
/// The statement is finalized when the last reference to it goes away. For finer control,
/// ``bind(_:)``, ``step()`` and ``reset()`` expose SQLite's own cycle.
public final class Statement {
    /// The statement's SQL, without the whitespace around it.
    ///
    /// Read from SQLite, which keeps each statement's text, only when asked (an error names it):
    /// a script of hundreds of statements, such as a declared schema's, copies none of them.
    public var sql: String {
        guard let text = sqlite3_sql(handle) else { return "" }
        return Database.trimmedText(UnsafeRawBufferPointer(start: text, count: strlen(text)))
    }
    private let handle: OpaquePointer
    // Keeps the connection open for as long as the statement lives.
    private let database: Database
    // The properties read for every row are exempt from Swift's dynamic exclusivity checks,
    // which cost a row transform of a million rows several percent: a statement is used by one
    // thread at a time, from its own methods, which never overlap.
    @exclusivity(unchecked) private var layout: Row.Layout?
    /// How many times SQLite had recompiled the statement when ``layout`` was read: it recompiles
    /// it, silently, when the schema changed since it was compiled (a column added or dropped),
    /// and its columns may then differ.
    private var layoutPreparation: Int32 = -1
    /// Whether the statement has started a run (returned a row) since it was last reset or
    /// finished: SQLite recompiles a statement only as a run starts, and a transaction can end
    /// only as a statement finishes, so the layout and the transaction guard are checked once per
    /// run, and rows after the first cost nothing.
    @exclusivity(unchecked) private var isRunning = false
    /// Whether the statement was stepped since it was last reset: ``execute(arguments:)`` resets
    /// after a run, and binding the next run's arguments then need not reset it again (one
    /// `sqlite3_reset` a row less in a loop of updates).
    @exclusivity(unchecked) private var needsReset = false
    private lazy var parameterCount = Int(sqlite3_bind_parameter_count(handle))

    init(handle: OpaquePointer, database: Database) {
        self.handle = handle
        self.database = database
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// Resets the statement and binds `arguments` to its `?` parameters, in order.
    ///
    /// - Throws: ``SQLiteError`` when the number of arguments differs from the number of
    ///   parameters (`SQLITE_RANGE`), or SQLite refuses a value.
    public func bind(_ arguments: [DatabaseValue]) throws {
        reset()
        // Every parameter is bound below, so no earlier value can linger: no need to clear them.
        let expected = parameterCount
        guard arguments.count == expected else {
            throw database.error(
                code: SQLITE_RANGE,
                message: "the statement has \(expected) parameters but \(arguments.count) arguments "
                    + "were given",
                sql: sql)
        }
        for (offset, value) in arguments.enumerated() {
            let status = bind(value, at: Int32(offset + 1))
            guard status == SQLITE_OK else { throw database.error(status, sql: sql) }
        }
    }

    /// Binds `value` to the parameter at `index` (from 1) and returns SQLite's status: for
    /// callers that bind from another shape than an array, without building one per row.
    func bind(_ value: DatabaseValue, at index: Int32) -> Int32 {
        switch value {
        case .null:
            return sqlite3_bind_null(handle, index)
        case let .integer(value):
            return sqlite3_bind_int64(handle, index, value)
        case let .real(value):
            return sqlite3_bind_double(handle, index, value)
        case var .text(value):
            return value.withUTF8 { bytes in
                // An empty buffer may have no address, which SQLite would take for NULL.
                guard let base = bytes.baseAddress, !bytes.isEmpty else {
                    return sqlite3_bind_text(handle, index, "", 0, Self.transient)
                }
                return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                    sqlite3_bind_text64(
                        handle, index, $0, sqlite3_uint64(bytes.count), Self.transient, UInt8(SQLITE_UTF8))
                }
            }
        case let .blob(value):
            guard !value.isEmpty else { return sqlite3_bind_zeroblob(handle, index, 0) }
            return value.withUnsafeBytes {
                sqlite3_bind_blob64(handle, index, $0.baseAddress, sqlite3_uint64($0.count), Self.transient)
            }
        }
    }

    /// Binds `bytes` as text to the parameter at `index` (from 1) without SQLite copying them, and
    /// returns SQLite's status: for a caller that binds a row's text where it lies and runs the
    /// statement while the bytes stay alive and unchanged, then binds again before the next run.
    func bindBorrowedText(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int32) -> Int32 {
        // An empty buffer may have no address, which SQLite would take for NULL.
        guard let base = bytes.baseAddress, !bytes.isEmpty else {
            return sqlite3_bind_text(handle, index, "", 0, Self.transient)
        }
        return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
            sqlite3_bind_text64(handle, index, $0, sqlite3_uint64(bytes.count), Self.borrowed, UInt8(SQLITE_UTF8))
        }
    }

    /// Resets the statement for a caller that then binds every parameter itself, and returns
    /// how many there are.
    func resetForBinding() -> Int {
        reset()
        return parameterCount
    }

    /// Tells SQLite that bound text stays where it is until the statement is bound again.
    private static var borrowed: sqlite3_destructor_type? { nil }

    /// Tells SQLite to copy bound text and blobs, since Swift frees its buffers after the call.
    private static var transient: sqlite3_destructor_type {
        unsafeBitCast(-1 as Int, to: sqlite3_destructor_type.self)
    }

    /// Runs the statement one step: returns the next row, or `nil` once it is done.
    ///
    /// Inside a migration step, a statement that ends the store's transaction (`INSERT OR
    /// ROLLBACK`, say) throws ``SQLiteStoreError``, and so does every statement after it: see
    /// ``SQLiteStoreError/Reason/transactionEnded(statement:sqliteError:)``.
    public func step() throws -> Row? {
        let wasRunning = isRunning
        if !wasRunning, let transactionGuard = database.transactionGuard { try transactionGuard.checkOpen() }
        needsReset = true
        let status = sqlite3_step(handle)
        if status == SQLITE_ROW {
            if wasRunning, let layout { return currentRow(layout) }
            isRunning = true
            return currentRow(currentLayout(columnCount: sqlite3_column_count(handle)))
        }
        isRunning = false
        guard status == SQLITE_DONE else { throw try failure(of: status) }
        if let transactionGuard = database.transactionGuard { try transactionGuard.statementDone(self.sql, on: database.handle) }
        return nil
    }

    /// The error of a step that failed with `status`, or the transaction guard's when the failure
    /// ended the store's transaction. Out of line: a step that succeeds never builds an error.
    @inline(never)
    private func failure(of status: Int32) throws -> SQLiteError {
        let error = database.error(status, sql: sql)
        try database.transactionGuard?.statementFailed(sql, on: database.handle, error: error)
        return error
    }

    /// Rewinds the statement so that it can run again, keeping its bound arguments. Also
    /// releases the read lock an unfinished query holds.
    public func reset() {
        guard needsReset else { return }
        // sqlite3_reset repeats the error of the last step, which step() already threw.
        sqlite3_reset(handle)
        needsReset = false
        isRunning = false
    }

    /// Binds `arguments` and runs the statement to its end, discarding any rows.
    public func execute(arguments: [DatabaseValue] = []) throws {
        try bind(arguments)
        defer { reset() }
        while try step() != nil {}
    }

    /// Binds `arguments` and returns every row the statement produces.
    public func rows(arguments: [DatabaseValue] = []) throws -> [Row] {
        var rows: [Row] = []
        try forEachRow(arguments: arguments) { rows.append($0) }
        return rows
    }

    /// Binds `arguments` and calls `body` with each row in turn, without keeping them: for
    /// results too large to hold in memory.
    public func forEachRow(arguments: [DatabaseValue] = [], _ body: (Row) throws -> Void) throws {
        try bind(arguments)
        defer { reset() }
        while let row = try step() {
            try body(row)
        }
    }

    private func currentRow(_ layout: Row.Layout) -> Row {
        let count = Int32(layout.names.count)
        var values: [DatabaseValue] = []
        values.reserveCapacity(Int(count))
        for column in 0..<count {
            values.append(Self.value(at: column, of: handle))
        }
        return Row(values: values, layout: layout)
    }

    /// The layout of the run that just started: the one read before unless SQLite recompiled the
    /// statement since (or its column count changed), read again from SQLite otherwise.
    private func currentLayout(columnCount: Int32) -> Row.Layout {
        let preparation = sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_REPREPARE, 0)
        if let layout, preparation == layoutPreparation, layout.names.count == Int(columnCount) {
            return layout
        }
        let names = (0..<columnCount).map { String(cString: sqlite3_column_name(handle, $0)) }
        let layout = Row.Layout(names: names, sql: sql, path: database.path)
        self.layout = layout
        layoutPreparation = preparation
        return layout
    }

    /// The value in `column` (from 0) of the current row of `statement`, in SQLite's storage class:
    /// how every query of the library reads a column, ``RecordQuery`` as well as this type.
    @inline(__always)
    static func value(at column: Int32, of statement: OpaquePointer) -> DatabaseValue {
        switch sqlite3_column_type(statement, column) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(statement, column))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(statement, column))
        case SQLITE_TEXT:
            // Text first, then its length: the documented order, as the call may convert it.
            guard let text = sqlite3_column_text(statement, column) else { return .text("") }
            let count = Int(sqlite3_column_bytes(statement, column))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            guard let bytes = sqlite3_column_blob(statement, column) else { return .blob(Data()) }
            return .blob(Data(bytes: bytes, count: Int(sqlite3_column_bytes(statement, column))))
        default:
            return .null
        }
    }
}
