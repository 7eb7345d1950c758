import Foundation
#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif

/// The baselines' way to SQLite: its C API and nothing else.
final class RawSQLite {
    private(set) var handle: OpaquePointer?

    init(path: String) throws {
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK else {
            throw RawSQLiteError(message: "open \(path): \(String(cString: sqlite3_errmsg(handle)))")
        }
        // A check that opens the database just after a library run may meet that run's store
        // closing its connection (its last-connection checkpoint holds the lock a moment): wait
        // for it, as an app would, rather than fail. It costs nothing when nobody holds a lock.
        sqlite3_busy_timeout(handle, 30_000)
    }

    deinit { sqlite3_close_v2(handle) }

    func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(handle, sql, nil, nil, &message) == SQLITE_OK else {
            defer { sqlite3_free(message) }
            throw RawSQLiteError(message: "\(sql): \(message.map { String(cString: $0) } ?? "")")
        }
    }

    func prepare(_ sql: String) throws -> OpaquePointer? {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK else {
            throw RawSQLiteError(message: "\(sql): \(String(cString: sqlite3_errmsg(handle)))")
        }
        return statement
    }

    func step(_ statement: OpaquePointer?) throws -> Bool {
        switch sqlite3_step(statement) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw RawSQLiteError(message: String(cString: sqlite3_errmsg(handle)))
        }
    }

    /// The integers of the first row of `sql`.
    func integers(_ sql: String) throws -> [Int64] {
        let statement = try prepare(sql)
        defer { sqlite3_finalize(statement) }
        guard try step(statement) else { throw RawSQLiteError(message: "\(sql) returned no row") }
        return (0..<sqlite3_column_count(statement)).map { sqlite3_column_int64(statement, $0) }
    }

    func scalarText(_ sql: String) throws -> String? {
        let statement = try prepare(sql)
        defer { sqlite3_finalize(statement) }
        guard try step(statement), let text = sqlite3_column_text(statement, 0) else { return nil }
        return String(cString: text)
    }
}

struct RawSQLiteError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// SQLite's destructor marker for text it must copy.
let transientDestructor = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

func bindText(_ statement: OpaquePointer?, _ index: Int32, _ text: String?) {
    guard var text else {
        sqlite3_bind_null(statement, index)
        return
    }
    text.withUTF8 { bytes in
        _ = bytes.withMemoryRebound(to: CChar.self) {
            sqlite3_bind_text(statement, index, $0.baseAddress, Int32($0.count), transientDestructor)
        }
    }
}

/// Text of a result column, or `nil` for NULL.
func columnText(_ statement: OpaquePointer?, _ index: Int32) -> String? {
    sqlite3_column_text(statement, index).map { text in
        String(decoding: UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(statement, index))), as: UTF8.self)
    }
}
