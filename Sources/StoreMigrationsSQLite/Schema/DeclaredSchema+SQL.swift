import StoreMigrations

/// The SQL that creates what a declaration describes, each statement written into one buffer as it
/// goes: a declared schema's statements are written at its registration, for its fingerprint, and
/// a creation runs them, so a schema of hundreds of tables is thousands of names quoted, which
/// strings made for each part and joined cost as much again as the writing itself.
extension DeclaredSchema {
    /// The `CREATE` statements of every table and index, each ending with `;`, one a line.
    func writeSQL(into sql: inout SQLText) {
        for (position, table) in tables.enumerated() {
            if position > 0 { sql += "\n" }
            table.writeSQL(into: &sql)
        }
    }
}

extension DeclaredSchema.Table {
    /// The `CREATE TABLE` statement.
    var createSQL: String {
        var sql = SQLText()
        writeCreateSQL(into: &sql)
        return sql.text
    }

    /// The columns and table constraints, as written between the parentheses of `CREATE TABLE`.
    var definitionSQL: String {
        var sql = SQLText()
        writeDefinitionItems(separatedBy: ",\n", into: &sql)
        return sql.text
    }

    /// The `CREATE TABLE` statement, then the `CREATE INDEX` statements, each ending with `;`.
    func writeSQL(into sql: inout SQLText) {
        writeCreateSQL(into: &sql)
        sql += ";"
        for index in indexes {
            sql += "\n"
            index.writeCreateSQL(on: name, into: &sql)
            sql += ";"
        }
    }

    private func writeCreateSQL(into sql: inout SQLText) {
        sql += "CREATE TABLE "
        sql.appendQuoted(name)
        sql += " (\n    "
        writeDefinitionItems(separatedBy: ",\n    ", into: &sql)
        sql += "\n)"
    }

    private func writeDefinitionItems(separatedBy separator: String, into sql: inout SQLText) {
        for (position, column) in columns.enumerated() {
            if position > 0 { sql += separator }
            column.writeDefinitionSQL(into: &sql)
        }
        // A table-constraint `PRIMARY KEY("id")` on an INTEGER column makes `id` the rowid, as
        // the column-constraint form does.
        if !primaryKey.isEmpty {
            sql += separator
            sql += "PRIMARY KEY ("
            sql.appendQuotedList(primaryKey)
            sql += ")"
        }
        for unique in uniqueConstraints {
            sql += separator
            sql += "UNIQUE ("
            sql.appendQuotedList(unique)
            sql += ")"
        }
        for foreignKey in foreignKeys {
            sql += separator
            foreignKey.writeDefinitionSQL(into: &sql)
        }
    }
}

extension DeclaredSchema.Column {
    /// The column as written in `CREATE TABLE` or `ALTER TABLE … ADD COLUMN`.
    var definitionSQL: String {
        var sql = SQLText()
        writeDefinitionSQL(into: &sql)
        return sql.text
    }

    func writeDefinitionSQL(into sql: inout SQLText) {
        sql.appendQuoted(name)
        if !type.sql.isEmpty {
            sql += " "
            sql += type.sql
        }
        if isNotNull { sql += " NOT NULL" }
        if let defaultValue {
            sql += " DEFAULT "
            sql += defaultValue.definitionSQL
        }
    }
}

extension DeclaredSchema.Index {
    /// The `CREATE INDEX` statement for the index on `table`.
    func createSQL(on table: String) -> String {
        var sql = SQLText()
        writeCreateSQL(on: table, into: &sql)
        return sql.text
    }

    func writeCreateSQL(on table: String, into sql: inout SQLText) {
        sql += isUnique ? "CREATE UNIQUE INDEX " : "CREATE INDEX "
        sql.appendQuoted(name)
        sql += " ON "
        sql.appendQuoted(table)
        sql += " ("
        sql.appendQuotedList(columns)
        sql += ")"
        if let condition { sql += " WHERE " + condition }
    }
}

extension DeclaredSchema.ForeignKey {
    /// The foreign key as a table constraint.
    var definitionSQL: String {
        var sql = SQLText()
        writeDefinitionSQL(into: &sql)
        return sql.text
    }

    func writeDefinitionSQL(into sql: inout SQLText) {
        sql += "FOREIGN KEY ("
        sql.appendQuotedList(columns)
        sql += ") REFERENCES "
        sql.appendQuoted(parentTable)
        if !parentColumns.isEmpty {
            sql += " ("
            sql.appendQuotedList(parentColumns)
            sql += ")"
        }
        if onDelete != .noAction { sql += " ON DELETE " + onDelete.rawValue }
        if onUpdate != .noAction { sql += " ON UPDATE " + onUpdate.rawValue }
    }
}

extension SQLTokenizer {
    /// The statement with each token separated by one space and bare words in capitals, so that
    /// two spellings of the same SQL compare equal.
    func normalized() -> String {
        tokens().map { token in
            switch token.kind {
            case .identifier(quoted: false): return token.value.uppercased()
            case .identifier(quoted: true): return Database.quoted(token.value)
            default: return token.value
            }
        }.joined(separator: " ")
    }

    /// The statement without parentheses that enclose all of it, such as `(1 + 2)`.
    func withoutEnclosingParentheses() -> String {
        let tokens = tokens()
        var first = 0
        var last = tokens.count - 1
        while last > first, tokens[first].kind == .openParenthesis,
            closingParenthesis(in: tokens, openingAt: first) == last
        {
            first += 1
            last -= 1
        }
        guard first <= last else { return "" }
        return text(tokens[first].range.lowerBound..<tokens[last].range.upperBound)
    }

    /// The index of the parenthesis closing the one at `open`, if any.
    func closingParenthesis(in tokens: [Token], openingAt open: Int) -> Int? {
        var depth = 0
        for index in open..<tokens.count {
            switch tokens[index].kind {
            case .openParenthesis: depth += 1
            case .closeParenthesis:
                depth -= 1
                if depth == 0 { return index }
            default: break
            }
        }
        return nil
    }
}
