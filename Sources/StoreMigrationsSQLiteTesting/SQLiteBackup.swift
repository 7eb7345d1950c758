#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import Foundation
import StoreMigrationsTesting

/// SQLite's online backup: one consistent snapshot of a database, whatever its journal mode,
/// written as a single file, while other connections may be using it.
enum SQLiteBackup {
    static func copy(_ source: URL, to destination: URL, store: String) throws {
        var from: OpaquePointer?
        var to: OpaquePointer?
        defer {
            sqlite3_close_v2(from)
            sqlite3_close_v2(to)
        }
        try check(sqlite3_open_v2(source.path, &from, SQLITE_OPEN_READONLY, nil), from, store)
        try check(sqlite3_open_v2(destination.path, &to, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil), to, store)
        guard let backup = sqlite3_backup_init(to, "main", from, "main") else {
            throw failure(to, store)
        }
        let stepped = sqlite3_backup_step(backup, -1)
        let finished = sqlite3_backup_finish(backup)
        guard stepped == SQLITE_DONE, finished == SQLITE_OK else { throw failure(to, store) }
        // A restored copy opens in the journal mode the store asks for; the file itself stays
        // self-contained, with no log beside it.
        try check(sqlite3_exec(to, "PRAGMA journal_mode = DELETE", nil, nil, nil), to, store)
    }

    private static func check(_ status: Int32, _ db: OpaquePointer?, _ store: String) throws {
        guard status == SQLITE_OK else { throw failure(db, store) }
    }

    private static func failure(_ db: OpaquePointer?, _ store: String) -> UpgradeTestingError {
        let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
        return UpgradeTestingError(store: store, reason: .copyFailed(detail: "SQLite backup: \(message)"))
    }
}
