#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import Foundation
import StoreMigrations

/// An error reported by SQLite, or by the ``Database`` wrapper on SQLite's behalf, with
/// everything needed to act on it: SQLite's result codes and message, the statement that failed,
/// and the database file.
///
/// ```swift
/// do {
///     try store.read { db in try db.rows("SELECT * FROM event") }
/// } catch let error as SQLiteError where error.isBusy {
///     // another process kept the database locked past the busy timeout
/// }
/// ```
public struct SQLiteError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// SQLite's primary result code, such as `SQLITE_BUSY` (5) or `SQLITE_CONSTRAINT` (19).
    public let code: Int32
    /// SQLite's extended result code, such as `SQLITE_CONSTRAINT_FOREIGNKEY` (787). Equals
    /// ``code`` when SQLite gives no detail.
    public let extendedCode: Int32
    /// SQLite's message, such as `"database is locked"`.
    public let message: String
    /// The statement that failed, if the error came from one.
    public let sql: String?
    /// The path of the database file.
    public let path: String
    /// The rows left pointing at missing parents, when a foreign-key check failed; otherwise
    /// empty. At most 100 are listed.
    public let foreignKeyViolations: [ForeignKeyViolation]
    /// For `SQLITE_BUSY`, the process that held what the wait was for when it gave up: the
    /// database's write lock, or, for a commit of a rollback-journal database, which waits for
    /// its readers, a reader's shared lock; where the system tells (Linux's `/proc/locks`), `nil`
    /// otherwise. It may be this process, through another connection.
    public let holderProcessID: Int32?
    /// Whether ``holderProcessID`` (or the unknown holder) is a reader the statement waited for,
    /// rather than the holder of the write lock.
    let holderIsReader: Bool

    /// How many foreign-key violations an error lists at most, so that a broken table of
    /// millions of rows does not make an error of millions of lines.
    static let maximumReportedViolations = 100

    /// What the connection knew when the error happened that SQLite's code does not say, and
    /// that changes what to do about it.
    enum Circumstance: Hashable {
        /// `SQLITE_READONLY` on a connection that could write the file: `PRAGMA query_only`.
        case queryOnly
        /// The statement ended the transaction it ran in (`OR ROLLBACK`, `RAISE(ROLLBACK)`).
        case rolledBackTransaction
    }

    /// Chooses the advice only: two errors are equal when SQLite reported the same thing (the
    /// holder, read from the system, is left out too).
    let circumstance: Circumstance?

    public static func == (lhs: SQLiteError, rhs: SQLiteError) -> Bool {
        (lhs.extendedCode, lhs.message, lhs.sql, lhs.path, lhs.foreignKeyViolations)
            == (rhs.extendedCode, rhs.message, rhs.sql, rhs.path, rhs.foreignKeyViolations)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(extendedCode)
        hasher.combine(message)
        hasher.combine(sql)
        hasher.combine(path)
        hasher.combine(foreignKeyViolations)
    }

    init(
        extendedCode: Int32, message: String, sql: String?, path: String,
        foreignKeyViolations: [ForeignKeyViolation] = [], circumstance: Circumstance? = nil,
        holderProcessID: Int32? = nil, holderIsReader: Bool = false
    ) {
        self.code = extendedCode & 0xFF
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
        self.path = path
        self.foreignKeyViolations = foreignKeyViolations
        self.circumstance = circumstance
        self.holderProcessID = holderProcessID
        self.holderIsReader = holderIsReader
    }

    /// The file is not a SQLite database (`SQLITE_NOTADB`), or is encrypted.
    public var isNotADatabase: Bool { code == SQLITE_NOTADB }

    /// The database or a table was locked (`SQLITE_BUSY`: by another connection or process, past
    /// the busy timeout; `SQLITE_LOCKED`: by a pending statement or a connection sharing the cache).
    public var isBusy: Bool { code == SQLITE_BUSY || code == SQLITE_LOCKED }

    /// A `UNIQUE`, `NOT NULL`, `CHECK`, primary-key or foreign-key constraint failed.
    public var isConstraintViolation: Bool { code == SQLITE_CONSTRAINT }

    /// A foreign-key constraint failed, either as a statement ran or in the check before commit.
    public var isForeignKeyViolation: Bool { extendedCode == Self.constraintForeignKey }

    /// `SQLITE_CONSTRAINT_FOREIGNKEY`, a C macro expression Swift does not import.
    static let constraintForeignKey: Int32 = SQLITE_CONSTRAINT | (3 << 8)

    public var description: String {
        var text = "SQLite error \(codeName) in \(path)"
        if let sql { text += " while running `\(sql)`" }
        text += ": \(message)."
        return text + " " + advice
    }

    public var errorDescription: String? { description }

    private var codeName: String {
        let primary = Self.names[code].map { "\($0) (\(code))" } ?? "\(code)"
        return extendedCode == code ? primary : "\(primary), extended code \(extendedCode)"
    }

    private var advice: String {
        switch code {
        case SQLITE_NOTADB:
            return "The file is not a SQLite database, or it is encrypted. It was left untouched: "
                + "restore it from a backup or move it aside, then launch again."
        case SQLITE_BUSY where holderIsReader:
            return "\(holder) kept reading the database longer than the busy timeout, and a commit "
                + "waits for every reader of a database with a rollback journal. Nothing was changed. End "
                + "long reads elsewhere, switch the database to WAL (journalMode: .wal), or raise the "
                + "store's busyTimeout, then try again."
        case SQLITE_BUSY:
            return "\(holder) kept the database locked longer than the busy "
                + "timeout. Nothing was changed. End long transactions elsewhere or raise the "
                + "store's busyTimeout, then try again."
        case SQLITE_LOCKED:
            return "A table is in use: a statement of this connection is still reading it, or a "
                + "connection sharing its cache holds it. Finish or reset the pending statement "
                + "first."
        case SQLITE_CONSTRAINT where circumstance == .rolledBackTransaction:
            return "Its conflict clause (OR ROLLBACK, ON CONFLICT ROLLBACK) or a trigger's "
                + "RAISE(ROLLBACK) rolled back the whole transaction, not only the statement: a "
                + "migration step fails with nothing of it kept. Use OR ABORT (the default) or OR "
                + "IGNORE to undo only the statement, or fix the data it writes."
        case SQLITE_CONSTRAINT where !foreignKeyViolations.isEmpty:
            let listed = foreignKeyViolations.map(\.description).joined(separator: "; ")
            let more = foreignKeyViolations.count >= Self.maximumReportedViolations ? "; …" : ""
            return "Rows point at parent rows that do not exist: \(listed)\(more). The step was "
                + "rolled back. Delete or repoint these rows in the migration before it returns."
        case SQLITE_CONSTRAINT:
            return "The statement broke a constraint of the schema; the statement was undone. "
                + "Fix the data it writes, or the constraint."
        case SQLITE_CORRUPT:
            return "The database file is damaged. Restore it from a backup."
        case SQLITE_READONLY where circumstance == .queryOnly:
            return "The connection is read-only (PRAGMA query_only = ON, set by a body, or the "
                + "connection of SQLiteStore.read); the file itself is writable. Nothing of the "
                + "statement was written. Leave query_only alone in migration bodies, and write "
                + "through a migration or SQLiteStore.write."
        case SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL:
            return "Check that the file and its directory exist, are writable by the app, and "
                + "that the disk has free space."
        case SQLITE_AUTH:
            return "A migration body may not begin, commit or roll back a transaction: the store "
                + "runs each migration in its own. Use SAVEPOINT for nested work."
        case SQLITE_MISMATCH, SQLITE_RANGE, SQLITE_MISUSE:
            return "Fix the code that reads or binds the values."
        default:
            return "Check the statement and the schema it expects."
        }
    }

    private var holder: String {
        switch holderProcessID {
        case nil: return holderIsReader ? "A reader (another connection or process)" : "Another connection or process"
        case getpid(): return "Another connection of this process (pid \(getpid()))"
        case let pid?: return "The process \(pid)"
        }
    }

    private static let names: [Int32: String] = [
        SQLITE_ERROR: "SQLITE_ERROR", SQLITE_PERM: "SQLITE_PERM", SQLITE_BUSY: "SQLITE_BUSY",
        SQLITE_LOCKED: "SQLITE_LOCKED", SQLITE_READONLY: "SQLITE_READONLY",
        SQLITE_IOERR: "SQLITE_IOERR", SQLITE_CORRUPT: "SQLITE_CORRUPT", SQLITE_FULL: "SQLITE_FULL",
        SQLITE_CANTOPEN: "SQLITE_CANTOPEN", SQLITE_CONSTRAINT: "SQLITE_CONSTRAINT",
        SQLITE_MISMATCH: "SQLITE_MISMATCH", SQLITE_MISUSE: "SQLITE_MISUSE",
        SQLITE_AUTH: "SQLITE_AUTH", SQLITE_RANGE: "SQLITE_RANGE", SQLITE_NOTADB: "SQLITE_NOTADB",
    ]
}

/// A row whose foreign key points at a parent row that does not exist, as reported by
/// `PRAGMA foreign_key_check`.
public struct ForeignKeyViolation: Sendable, Hashable, CustomStringConvertible {
    /// The table holding the row.
    public let table: String
    /// The row's rowid, or `nil` for a `WITHOUT ROWID` table.
    public let rowID: Int64?
    /// The table the foreign key refers to.
    public let parentTable: String
    /// The foreign key's id, as in ``Database/foreignKeys(of:)``.
    public let foreignKeyID: Int

    public var description: String {
        "\(table) rowid \(rowID.map(String.init) ?? "?") → \(parentTable) (foreign key \(foreignKeyID))"
    }
}
