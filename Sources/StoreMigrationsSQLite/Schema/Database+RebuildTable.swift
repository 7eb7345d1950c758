#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import Foundation
import StoreMigrations

/// Schema changes `ALTER TABLE` cannot make, done by rebuilding the table as SQLite documents in
/// "Making Other Kinds Of Table Schema Changes" (https://www.sqlite.org/lang_altertable.html).
extension Database {
    /// Rebuilds `table` with a new definition, keeping its rows, indexes and triggers, and the
    /// foreign keys other tables hold to it: for changes `ALTER TABLE` cannot make, such as a
    /// column's type, a constraint, or the primary key.
    ///
    /// ```swift
    /// // event.title becomes NOT NULL, and the start date moves from text to a Unix time.
    /// try db.rebuildTable(
    ///     "event",
    ///     definition: """
    ///         id INTEGER PRIMARY KEY,
    ///         title TEXT NOT NULL DEFAULT '',
    ///         starts_at INTEGER,
    ///         calendar_id INTEGER REFERENCES calendar(id)
    ///         """,
    ///     copying: ["title": "coalesce(title, '')", "starts_at": "strftime('%s', starts_on)"])
    /// ```
    ///
    /// Follows SQLite's documented procedure: the new table is created under a temporary name,
    /// the rows are copied, the old table dropped, the new one renamed, and the old table's
    /// indexes and triggers created again from their SQL. Rowids of rowid tables are kept, and
    /// so is an `AUTOINCREMENT` counter. Views must still compile afterwards, and the foreign
    /// keys of the table and of the tables that refer to it are checked (in a
    /// ``SQLiteStore/ForeignKeyCheck/deferred`` store, by the store's check before commit).
    /// Everything happens in a savepoint: if a step throws, the table is as it was.
    ///
    /// Drop an index or view that names a column the new definition removes before the rebuild,
    /// and create the one you want after it.
    ///
    /// - Parameters:
    ///   - table: The table to rebuild.
    ///   - definition: The new columns and table constraints, as written between the parentheses
    ///     of `CREATE TABLE`.
    ///   - options: Table options written after the parentheses, such as `"WITHOUT ROWID"` or
    ///     `"STRICT"`.
    ///   - copying: SQL expressions over the old table's columns giving the value of new columns,
    ///     by new column name. Columns not listed take the old column of the same name, or their
    ///     default if the old table had none.
    /// - Throws: ``SQLiteError``; in a store that enforces foreign keys during the body
    ///   (``SQLiteStore/ForeignKeyCheck/immediate``), also when another table refers to `table`
    ///   with an `ON DELETE` action, since dropping the old table would run that action.
    public func rebuildTable(
        _ table: String, definition: String, options: String = "", copying: [String: String] = [:]
    ) throws {
        try rebuildTable(table, definition: definition, options: options, copying: copying, dependents: .refuse)
    }

    /// ``rebuildTable(_:definition:options:copying:)``, saying what to do with the triggers of
    /// other tables and the views that read a column the new definition removes: refuse (the
    /// default, with ``SQLiteStoreError``) or drop them.
    ///
    /// ```swift
    /// try db.rebuildTable("event", definition: "id INTEGER PRIMARY KEY, title TEXT", dependents: .drop)
    /// ```
    public func rebuildTable(
        _ table: String, definition: String, options: String = "", copying: [String: String] = [:],
        dependents: SchemaDependents
    ) throws {
        try rebuildTable(table, definition: definition, options: options, copying: copying, dependents: dependents) { _ in true }
    }

    /// Drops a column of `table`, keeping its values in the other columns.
    ///
    /// Uses `ALTER TABLE … DROP COLUMN`. When SQLite refuses because the column is indexed,
    /// unique, a primary key or holds a foreign key, the table is rebuilt without the column
    /// (see ``rebuildTable(_:definition:options:copying:)``) and indexes on the column are
    /// dropped with it. A column that a table constraint, a trigger or a view names is not
    /// dropped: change those first. A trigger of another table or a view that reads the column
    /// is refused with ``SQLiteStoreError`` naming it; see ``dropColumn(_:from:dependents:)``.
    public func dropColumn(_ column: String, from table: String) throws {
        try dropColumn(column, from: table, dependents: .refuse)
    }

    /// ``dropColumn(_:from:)``, saying what to do with the triggers of other tables and the views
    /// that read the column: refuse (the default) or drop them.
    ///
    /// ```swift
    /// try db.dropColumn("legacy_flag", from: "event", dependents: .drop)
    /// ```
    public func dropColumn(_ column: String, from table: String, dependents: SchemaDependents) throws {
        guard let tableName = try canonicalTableName(table) else { throw noSuchTable(table) }
        guard let columnName = try tableInfo(tableName).first(where: { sameName($0.name, column) })?.name else {
            throw error(code: SQLITE_ERROR, message: "table \(tableName) has no column named \(column)", sql: nil)
        }
        try inSavepoint {
            try resolveDependents(onColumns: [columnName], of: tableName, policy: dependents)
            do {
                try inSavepoint {
                    try execute("ALTER TABLE \(Self.quoted(tableName)) DROP COLUMN \(Self.quoted(columnName))")
                }
            } catch let refusal as SQLiteError where refusal.code == SQLITE_ERROR {
                try dropColumnByRebuilding(columnName, from: tableName, refusal: refusal)
            }
        }
    }

    private func dropColumnByRebuilding(_ column: String, from table: String, refusal: SQLiteError) throws {
        func cannotDrop(_ reason: String) -> SQLiteError {
            error(
                code: SQLITE_ERROR,
                message: "cannot drop column \(column) from \(table): \(reason) (SQLite refused "
                    + "ALTER TABLE DROP COLUMN: \(refusal.message))",
                sql: refusal.sql)
        }
        guard
            let createSQL = try scalar(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
                arguments: [.text(table)], as: String.self),
            let (items, options) = SQLTokenizer(createSQL).tableDefinition()
        else { throw refusal }

        var kept: [String] = []
        var keptColumns = 0
        for item in items {
            let tokenizer = SQLTokenizer(item)
            guard let first = tokenizer.tokens().first else { continue }
            let isConstraint = first.kind == .identifier(quoted: false)
                && SQLTokenizer.tableConstraintKeywords.contains(first.value.uppercased())
            if isConstraint {
                if tokenizer.mentions(column) {
                    throw cannotDrop("the table constraint `\(item)` uses it; rebuild the table with "
                        + "rebuildTable(_:definition:options:copying:) and the constraints you want")
                }
                kept.append(item)
            } else if !first.names(column) {
                kept.append(item)
                keptColumns += 1
            }
        }
        guard keptColumns > 0 else { throw refusal }

        for trigger in try rows(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?",
            arguments: [.text(table)])
        where SQLTokenizer(try trigger["sql"]).mentions(column) {
            throw cannotDrop("trigger \(try trigger["name"] as String) uses it; drop the trigger first "
                + "and create the one you want after")
        }

        try rebuildTable(table, definition: kept.joined(separator: ",\n"), options: options, copying: [:], dependents: .refuse) { object in
            object.type != "index" || !Self.indexKeyMentions(column, indexSQL: object.sql)
        }
    }

    /// Whether the key or `WHERE` clause of a `CREATE INDEX` statement names `column` (its name
    /// and table, before the parenthesis, do not count).
    private static func indexKeyMentions(_ column: String, indexSQL: String) -> Bool {
        SQLTokenizer(indexSQL).tokens()
            .drop { $0.kind != .openParenthesis }
            .contains { $0.names(column) }
    }

    /// The rebuild, keeping only the old indexes and triggers `keep` accepts.
    func rebuildTable(
        _ table: String, definition: String, options: String, copying expressions: [String: String],
        dependents: SchemaDependents, keeping keep: (_ object: (type: String, sql: String)) -> Bool
    ) throws {
        guard let table = try canonicalTableName(table) else { throw noSuchTable(table) }

        // Steps 1 and 12 (foreign keys off around the transaction) are the store's in its
        // deferred mode. With foreign keys enforced, dropping the old table deletes its rows one
        // by one: deferring the checks lets the new table take over its keys, but ON DELETE
        // actions would still run on the tables that refer to it, so those are refused.
        let enforcesForeignKeys = try pragmaFlag("foreign_keys")
        var referringTables: [String] = []
        if enforcesForeignKeys {
            for (child, action) in try foreignKeysReferring(to: table) {
                if !sameName(child, table), action.uppercased() != "NO ACTION" {
                    throw error(
                        code: SQLITE_MISUSE,
                        message: "cannot rebuild table \(table) while foreign keys are enforced: table "
                            + "\(child) refers to it with ON DELETE \(action), which dropping the old "
                            + "table would run on \(child)'s rows. Run this migration in a store with "
                            + "foreignKeyCheck: .deferred",
                        sql: nil)
                }
                if !referringTables.contains(where: { sameName($0, child) }) { referringTables.append(child) }
            }
        }
        let wasDeferring = enforcesForeignKeys ? try pragmaFlag("defer_foreign_keys") : true
        if !wasDeferring { try setPragmaFlag("defer_foreign_keys", true) }
        // Turning deferral off forgets the violations it counted; step 10 below has checked the
        // only tables the rebuild can break, so nothing unchecked is forgotten.
        defer { if !wasDeferring { try? setPragmaFlag("defer_foreign_keys", false) } }

        try inSavepoint {
            // Step 3: remember the indexes and triggers (SQL-less ones belong to constraints).
            let schemaObjects = try rows(
                """
                SELECT type, name, sql FROM sqlite_master
                WHERE tbl_name = ? AND type IN ('index', 'trigger') AND sql IS NOT NULL
                """,
                arguments: [.text(table)])
            let oldColumns = try tableInfo(table).map(\.name)
            let oldHasRowID = try !isWithoutRowID(table)
            let hasSequenceTable = try canonicalTableName("sqlite_sequence") != nil
            let oldSequence = hasSequenceTable
                ? try scalar("SELECT seq FROM sqlite_sequence WHERE name = ?", arguments: [.text(table)], as: Int64.self)
                : nil

            // Step 4: the new table under a free temporary name.
            let temporary = try unusedTableName(startingWith: "store_migrations_rebuild_\(table)")
            try execute("CREATE TABLE \(Self.quoted(temporary)) (\(definition)) \(options)")
            let newColumns = try tableInfo(temporary)

            // Step 5: copy the rows.
            for target in expressions.keys where !newColumns.contains(where: { sameName($0.name, target) }) {
                throw error(
                    code: SQLITE_ERROR,
                    message: "copying names column \(target), which the new definition of \(table) "
                        + "does not have; its columns are \(newColumns.map(\.name).joined(separator: ", "))",
                    sql: nil)
            }
            var targets: [String] = []
            var sources: [String] = []
            for column in newColumns {
                if let expression = expressions.first(where: { sameName($0.key, column.name) })?.value {
                    targets.append(Self.quoted(column.name))
                    sources.append(expression)
                } else if let old = oldColumns.first(where: { sameName($0, column.name) }) {
                    targets.append(Self.quoted(column.name))
                    sources.append(Self.quoted(old))
                }
            }
            let newHasRowID = try !isWithoutRowID(temporary)
            let namesRowID = (oldColumns + newColumns.map(\.name)).contains { sameName($0, "rowid") }
            if oldHasRowID, newHasRowID, !namesRowID, !Self.hasRowIDAlias(newColumns) {
                targets.append("rowid")
                sources.append("rowid")
            }
            if !targets.isEmpty {
                try execute("""
                    INSERT INTO \(Self.quoted(temporary)) (\(targets.joined(separator: ", ")))
                    SELECT \(sources.joined(separator: ", ")) FROM \(Self.quoted(table))
                    """)
            }

            // Before step 6: what reads a column the new definition removes.
            let removed = oldColumns.filter { old in !newColumns.contains { sameName($0.name, old) } }
            try resolveDependents(onColumns: removed, of: table, policy: dependents)

            // Steps 6 and 7.
            try execute("DROP TABLE \(Self.quoted(table))")
            try renameTableLeavingReferences(temporary, to: table)
            if let oldSequence, SQLTokenizer(definition).tokens().contains(where: { $0.isKeyword("AUTOINCREMENT") }) {
                try execute(
                    "UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?",
                    arguments: [.integer(oldSequence), .text(table)])
                if changesCount == 0 {
                    try execute(
                        "INSERT INTO sqlite_sequence(name, seq) VALUES (?, ?)",
                        arguments: [.text(table), .integer(oldSequence)])
                }
            }

            // Step 8: indexes and triggers again.
            for object in schemaObjects {
                let type: String = try object["type"]
                let sql: String = try object["sql"]
                if keep((type, sql)) { try execute(sql) }
            }

            // Step 9.
            try checkViewsCompile(after: "rebuilding \(table)", advice: "before the rebuild")

            // Step 10.
            if enforcesForeignKeys {
                try checkForeignKeys(in: [table] + referringTables.filter { !sameName($0, table) })
            }
        }
    }

    /// The tables whose foreign keys refer to `table` (including itself), with each key's
    /// `ON DELETE` action.
    func foreignKeysReferring(to table: String) throws -> [(child: String, onDelete: String)] {
        try rows(
            """
            SELECT m.name AS child, f.on_delete AS action
            FROM sqlite_master AS m, pragma_foreign_key_list(m.name) AS f
            WHERE m.type = 'table' AND f."table" = ? COLLATE NOCASE
            """,
            arguments: [.text(table)]
        ).map { (try $0["child"], try $0["action"]) }
    }

    /// A name that starts with `base` and no table has.
    func unusedTableName(startingWith base: String) throws -> String {
        var name = base
        while try canonicalTableName(name) != nil { name += "_" }
        return name
    }

    /// Renames a table in legacy mode, which leaves alone the views, triggers and foreign keys
    /// that name `table`'s new name: they were written for the table that now takes that name,
    /// and a modern rename would refuse to parse them while that table is missing.
    func renameTableLeavingReferences(_ table: String, to newName: String) throws {
        let wasLegacy = try pragmaFlag("legacy_alter_table")
        try setPragmaFlag("legacy_alter_table", true)
        defer { if !wasLegacy { try? setPragmaFlag("legacy_alter_table", false) } }
        try execute("ALTER TABLE \(Self.quoted(table)) RENAME TO \(Self.quoted(newName))")
    }

    /// Throws for the first view that no longer compiles after `change` (e.g. "rebuilding
    /// event"), advising to drop it `advice` (e.g. "before the rebuild") and create it again.
    func checkViewsCompile(after change: String, advice: String) throws {
        for view in try rows("SELECT name FROM sqlite_master WHERE type = 'view'") {
            let name: String = try view["name"]
            do {
                _ = try prepare("SELECT * FROM \(Self.quoted(name)) LIMIT 0")
            } catch let broken as SQLiteError {
                throw error(
                    code: broken.extendedCode,
                    message: "view \(name) no longer compiles after \(change): \(broken.message). "
                        + "Drop the view \(advice) and create it again after",
                    sql: broken.sql)
            }
        }
    }

    /// Whether the columns hold an `INTEGER PRIMARY KEY`, which is the rowid under another name.
    static func hasRowIDAlias(_ columns: [ColumnInfo]) -> Bool {
        let key = columns.filter { $0.primaryKeyPosition > 0 }
        return key.count == 1 && key[0].type.uppercased() == "INTEGER"
    }

    func sameName(_ left: String, _ right: String) -> Bool {
        left.caseInsensitiveCompare(right) == .orderedSame
    }
}
