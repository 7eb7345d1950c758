#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import StoreMigrations

/// The version of the SQLite library the package is linked against, e.g. `"3.40.1"`.
var linkedSQLiteVersion: String { String(cString: sqlite3_libversion()) }
