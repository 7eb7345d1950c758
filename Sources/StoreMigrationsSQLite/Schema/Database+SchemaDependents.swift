import StoreMigrations

/// What a schema helper does with the triggers of other tables and the views that read a column
/// it removes.
///
/// ```swift
/// try db.dropColumn("legacy_flag", from: "event", dependents: .drop)
/// ```
public enum SchemaDependents: Sendable, Hashable {
    /// Refuse, with ``SQLiteStoreError/Reason/dependentSchemaObject(_:column:table:)`` naming the
    /// first such trigger or view, and change nothing: the default, since SQLite checks a trigger
    /// only when it fires, and the app's next insert would fail instead of the migration.
    case refuse
    /// Drop those triggers and views with the column; create the ones you want after.
    case drop
}

extension Database {
    /// Applies `policy` to the triggers of tables other than `table`, and the views, whose SQL
    /// names both `table` and one of `columns`: refuses, or drops them.
    ///
    /// Read from the SQL text (SQLite keeps no dependency list), so an object that names a column
    /// of the same name of another table counts too: refusing it is the safe mistake, and
    /// ``SchemaDependents/drop`` resolves it.
    func resolveDependents(onColumns columns: [String], of table: String, policy: SchemaDependents) throws {
        guard !columns.isEmpty else { return }
        let candidates = try rows(
            """
            SELECT type, name, sql FROM sqlite_master
            WHERE sql IS NOT NULL AND (type = 'view' OR (type = 'trigger' AND tbl_name <> ? COLLATE NOCASE))
            ORDER BY type, name
            """,
            arguments: [.text(table)])
        for candidate in candidates {
            let type: String = try candidate["type"]
            let name: String = try candidate["name"]
            let tokenizer = SQLTokenizer(try candidate["sql"] as String)
            guard tokenizer.mentions(table), let column = columns.first(where: { tokenizer.mentions($0) }) else { continue }
            switch policy {
            case .refuse:
                throw SQLiteStoreError(
                    .dependentSchemaObject(type == "view" ? .view(name) : .trigger(name), column: column, table: table),
                    store: "SQLite database \(path)")
            case .drop:
                try execute("DROP \(type == "view" ? "VIEW" : "TRIGGER") \(Self.quoted(name))")
            }
        }
    }
}
