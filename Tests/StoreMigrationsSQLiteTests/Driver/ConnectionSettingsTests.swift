import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// The settings a store compares before and after a body ran: read with plain `PRAGMA`
/// statements compiled for each read, they must be what one query over the table-valued pragmas
/// reads, and see every change a body can make.
@Suite struct ConnectionSettingsTests {
    /// The query the settings were read with before, as the reference.
    static let tableValuedQuery = """
        SELECT * FROM pragma_query_only, pragma_locking_mode, pragma_busy_timeout, pragma_foreign_keys,
            pragma_recursive_triggers, pragma_journal_mode, pragma_synchronous, pragma_defer_foreign_keys,
            pragma_ignore_check_constraints, pragma_trusted_schema, pragma_reverse_unordered_selects,
            pragma_automatic_index, pragma_temp_store, pragma_cell_size_check, pragma_cache_size,
            (SELECT count(*) FROM pragma_database_list), (SELECT count(*) FROM temp.sqlite_master)
        """

    /// One change a body could leave behind for each setting read; several of them are values
    /// SQLite writes into a compiled `PRAGMA` statement, so a statement kept from the first read
    /// would miss them.
    static let changes = [
        "PRAGMA query_only = 1", "PRAGMA locking_mode = EXCLUSIVE", "PRAGMA busy_timeout = 1234", "PRAGMA foreign_keys = 0",
        "PRAGMA recursive_triggers = 1", "PRAGMA journal_mode = DELETE", "PRAGMA synchronous = OFF",
        "BEGIN; PRAGMA defer_foreign_keys = 1", "PRAGMA ignore_check_constraints = 1", "PRAGMA trusted_schema = 0",
        "PRAGMA reverse_unordered_selects = 1", "PRAGMA automatic_index = 0", "PRAGMA temp_store = MEMORY",
        "PRAGMA cell_size_check = 1", "PRAGMA cache_size = -1234", "ATTACH ':memory:' AS other",
        "CREATE TEMP TABLE scratch(x)",
    ]

    @Test(arguments: changes) func eachChangeIsSeenAndReadAsTheTableValuedPragmasReadIt(_ change: String) throws {
        let folder = try TemporaryFolder()
        let db = try Database(path: folder.file("settings.sqlite").path, busyTimeout: 0, mode: .migrating(switchingToWAL: true))
        try db.execute("PRAGMA trusted_schema = 1")
        let before = try ConnectionSettings(reading: db)
        let again = try ConnectionSettings(reading: db)
        #expect(again == before, "read twice, unchanged \(before.values) \(again.values)")
        #expect(before.values == (try db.row(Self.tableValuedQuery)?.values))
        try db.execute(change)
        let after = try ConnectionSettings(reading: db)
        #expect(after != before)
        #expect(after.values == (try db.row(Self.tableValuedQuery)?.values))
    }
}
