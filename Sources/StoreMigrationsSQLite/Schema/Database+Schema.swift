#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import StoreMigrations

/// Reading and changing the schema. Table and column names are quoted for you; pass them as
/// they are, without quotes.
extension Database {
    // MARK: Reading the schema

    /// Whether the database has a table named `table` (compared case-insensitively, like SQL).
    public func tableExists(_ table: String) throws -> Bool {
        try canonicalTableName(table) != nil
    }

    /// The columns of `table`, in order.
    ///
    /// ```swift
    /// let columns = try db.tableInfo("event").map(\.name)   // ["id", "title", "starts_at"]
    /// ```
    ///
    /// - Throws: ``SQLiteError`` if there is no such table.
    public func tableInfo(_ table: String) throws -> [ColumnInfo] {
        let rows = try rows(
            "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?) ORDER BY cid",
            arguments: [.text(table)])
        guard !rows.isEmpty else { throw noSuchTable(table) }
        return try rows.map { row in
            ColumnInfo(
                name: try row["name"], type: try row["type"], isNotNull: try row["notnull"],
                defaultValueSQL: try row["dflt_value"], primaryKeyPosition: try row["pk"])
        }
    }

    /// The indexes of `table`, by name, including those SQLite made for `UNIQUE` and
    /// `PRIMARY KEY` constraints.
    ///
    /// - Throws: ``SQLiteError`` if there is no such table.
    public func indexes(on table: String) throws -> [IndexInfo] {
        guard try tableExists(table) else { throw noSuchTable(table) }
        let list = try rows(
            "SELECT name, \"unique\", origin, partial FROM pragma_index_list(?) ORDER BY name",
            arguments: [.text(table)])
        let columnsQuery = try prepare("SELECT name FROM pragma_index_info(?) ORDER BY seqno")
        return try list.map { row in
            let name: String = try row["name"]
            let columns = try columnsQuery.rows(arguments: [.text(name)]).compactMap { try $0["name"] as String? }
            let origin: IndexInfo.Origin
            switch try row["origin"] as String {
            case "u": origin = .uniqueConstraint
            case "pk": origin = .primaryKeyConstraint
            default: origin = .createIndex
            }
            return IndexInfo(
                name: name, columns: columns, isUnique: try row["unique"], origin: origin,
                isPartial: try row["partial"])
        }
    }

    /// The foreign keys of `table`: the references it holds to other tables.
    ///
    /// - Throws: ``SQLiteError`` if there is no such table.
    public func foreignKeys(of table: String) throws -> [ForeignKeyInfo] {
        guard try tableExists(table) else { throw noSuchTable(table) }
        let rows = try rows(
            """
            SELECT id, "table", "from", "to", on_update, on_delete
            FROM pragma_foreign_key_list(?) ORDER BY id, seq
            """,
            arguments: [.text(table)])
        var keys: [ForeignKeyInfo] = []
        var index = rows.startIndex
        while index < rows.endIndex {
            let id: Int = try rows[index]["id"]
            let end = try rows[index...].firstIndex { try $0["id"] as Int != id } ?? rows.endIndex
            let group = rows[index..<end]
            keys.append(ForeignKeyInfo(
                id: id, parentTable: try rows[index]["table"],
                columns: try group.map { try $0["from"] },
                parentColumns: try group.map { try $0["to"] },
                onUpdate: try rows[index]["on_update"], onDelete: try rows[index]["on_delete"]))
            index = end
        }
        return keys
    }

    // MARK: Changing the schema

    /// Adds a column to `table` with `ALTER TABLE … ADD COLUMN`. Existing rows get `defaultValue`.
    ///
    /// ```swift
    /// try db.addColumn("archived", type: .integer, to: "event", notNull: true, defaultValue: 0)
    /// ```
    ///
    /// SQLite requires a non-`NULL` default for a `NOT NULL` column added to a table.
    public func addColumn(
        _ column: String, type: ColumnType, to table: String, notNull: Bool = false,
        defaultValue: DatabaseValue? = nil
    ) throws {
        var definition = "\(Self.quoted(column)) \(type.sql)"
        if notNull { definition += " NOT NULL" }
        if let defaultValue { definition += " DEFAULT \(defaultValue.sqlLiteral)" }
        try execute("ALTER TABLE \(Self.quoted(table)) ADD COLUMN \(definition)")
    }

    /// Renames a column of `table`, keeping its values; indexes, triggers, views and foreign keys
    /// that name it follow.
    public func renameColumn(_ column: String, to newName: String, in table: String) throws {
        try execute(
            "ALTER TABLE \(Self.quoted(table)) RENAME COLUMN \(Self.quoted(column)) TO \(Self.quoted(newName))")
    }

    /// Renames a table; its indexes and triggers follow, and so do the foreign keys, triggers and
    /// views of other tables that refer to it.
    public func renameTable(_ table: String, to newName: String) throws {
        try execute("ALTER TABLE \(Self.quoted(table)) RENAME TO \(Self.quoted(newName))")
    }

    /// Creates an index on `columns` of `table`.
    ///
    /// ```swift
    /// try db.createIndex("event_on_starts_at", on: "event", columns: ["starts_at"])
    /// ```
    public func createIndex(_ name: String, on table: String, columns: [String], unique: Bool = false) throws {
        let list = columns.map(Self.quoted).joined(separator: ", ")
        try execute(
            "CREATE \(unique ? "UNIQUE " : "")INDEX \(Self.quoted(name)) ON \(Self.quoted(table))(\(list))")
    }

    // MARK: Internals shared by the helpers

    /// The table's name as the schema spells it, or `nil` if there is no such table.
    func canonicalTableName(_ table: String) throws -> String? {
        try scalar(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE",
            arguments: [.text(table)], as: String.self)
    }

    func noSuchTable(_ table: String) -> SQLiteError {
        error(code: SQLITE_ERROR, message: "no such table: \(table)", sql: nil)
    }

    /// Whether `table` was declared `WITHOUT ROWID`.
    func isWithoutRowID(_ table: String) throws -> Bool {
        try scalar(
            "SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ? COLLATE NOCASE",
            arguments: [.text(table)], as: Bool.self) ?? false
    }

    /// The first rows `PRAGMA foreign_key_check` reports, for `table` or for the whole database.
    func foreignKeyViolations(in table: String? = nil) throws -> [ForeignKeyViolation] {
        let check = try prepare(
            "PRAGMA foreign_key_check" + (table.map { "(\(Self.quoted($0)))" } ?? ""))
        try check.bind([])
        defer { check.reset() }
        var violations: [ForeignKeyViolation] = []
        while violations.count < SQLiteError.maximumReportedViolations, let row = try check.step() {
            violations.append(ForeignKeyViolation(
                table: try row[0], rowID: try row[1], parentTable: try row[2], foreignKeyID: try row[3]))
        }
        return violations
    }

    /// Throws the violations `PRAGMA foreign_key_check` finds in `tables`, or in the whole
    /// database when `tables` is `nil`: for a body that moves rows while foreign keys are not
    /// enforced and wants to know before it goes on, or a ``SQLiteStore/ForeignKeyCheck/immediate``
    /// store's step that wants one check of the tables it touched.
    ///
    /// ```swift
    /// try db.execute("DELETE FROM calendar WHERE name = 'Old'")
    /// try db.checkForeignKeys(in: ["event"])   // events left pointing at it?
    /// ```
    ///
    /// - Throws: ``SQLiteError`` with ``SQLiteError/isForeignKeyViolation`` and its
    ///   ``SQLiteError/foreignKeyViolations`` (at most 100).
    public func checkForeignKeys(in tables: [String]? = nil) throws {
        let violations = try tables?.flatMap { try foreignKeyViolations(in: $0) } ?? foreignKeyViolations()
        guard !violations.isEmpty else { return }
        throw SQLiteError(
            extendedCode: SQLiteError.constraintForeignKey,
            message: "FOREIGN KEY constraint failed",
            sql: "PRAGMA foreign_key_check", path: path,
            foreignKeyViolations: Array(violations.prefix(SQLiteError.maximumReportedViolations)))
    }
}
