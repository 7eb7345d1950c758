import StoreMigrations

extension Database {
    /// The database's schema, read into the value a declaration makes: to compare with a declared
    /// schema, to print, or to start the declaration of an app that has none yet.
    ///
    /// ```swift
    /// let schema = try store.read { db in try db.schema() }
    /// print(schema)   // CREATE TABLE "nota" (…);
    /// ```
    ///
    /// The store's own tables, SQLite's internal tables and virtual tables are left out. Only
    /// what a declaration can describe is read: `CHECK` constraints, collations, triggers and
    /// views are not, and an index on expressions lists only its plain columns.
    public func schema() throws -> DeclaredSchema {
        let names = try rows(
            """
            SELECT m.name FROM sqlite_master AS m JOIN pragma_table_list AS l ON l.name = m.name
            WHERE m.type = 'table' AND l.schema = 'main' AND l.type = 'table'
                AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND m.name NOT IN (?, ?)
            ORDER BY m.rowid
            """,
            arguments: [.text(SQLiteStore.levelsTable), .text(SQLiteStore.historyTable)])
        return DeclaredSchema(try names.map { try declaredTable(try $0["name"]) })
    }

    /// The live table `name` as a declaration.
    private func declaredTable(_ name: String) throws -> DeclaredSchema.Table {
        let info = try tableInfo(name)
        let columns = info.map { column in
            DeclaredSchema.Column.column(
                column.name, ColumnType(column.type), notNull: column.isNotNull,
                default: column.defaultValueSQL.map(DeclaredSchema.Default.init(parsing:)))
        }
        let primaryKey = info.filter { $0.primaryKeyPosition > 0 }
            .sorted { $0.primaryKeyPosition < $1.primaryKeyPosition }
            .map(\.name)
        let allIndexes = try indexes(on: name)
        let indexes = try allIndexes.filter { $0.origin == .createIndex }.map { index in
            DeclaredSchema.Index.index(
                index.name, on: index.columns, unique: index.isUnique,
                where: index.isPartial ? try partialIndexCondition(index.name) : nil)
        }
        let foreignKeys = try foreignKeys(of: name).map { key in
            DeclaredSchema.ForeignKey.foreignKey(
                key.columns, references: key.parentTable, columns: key.parentColumns.compactMap { $0 },
                onDelete: DeclaredSchema.ForeignKey.Action(rawValue: key.onDelete.uppercased()) ?? .noAction,
                onUpdate: DeclaredSchema.ForeignKey.Action(rawValue: key.onUpdate.uppercased()) ?? .noAction)
        }
        return .table(
            name, primaryKey: primaryKey, columns: columns,
            unique: allIndexes.filter { $0.origin == .uniqueConstraint }.map(\.columns),
            foreignKeys: foreignKeys, indexes: indexes)
    }

    /// The `WHERE` condition of a partial index, from the statement that created it.
    private func partialIndexCondition(_ index: String) throws -> String? {
        guard
            let sql = try scalar(
                "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?", arguments: [.text(index)],
                as: String.self)
        else { return nil }
        let tokenizer = SQLTokenizer(sql)
        let tokens = tokenizer.tokens()
        guard let open = tokens.firstIndex(where: { $0.kind == .openParenthesis }),
            let close = tokenizer.closingParenthesis(in: tokens, openingAt: open),
            close + 2 < tokens.count, tokens[close + 1].isKeyword("WHERE"), let last = tokens.last
        else { return nil }
        return tokenizer.text(tokens[close + 2].range.lowerBound..<last.range.upperBound)
    }
}
