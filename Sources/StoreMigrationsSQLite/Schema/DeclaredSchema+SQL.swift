import StoreMigrations

/// The SQL that creates what a declaration describes.
extension DeclaredSchema.Table {
    /// The `CREATE TABLE` statement.
    var createSQL: String {
        "CREATE TABLE \(Database.quoted(name)) (\n    " + definitionItems.joined(separator: ",\n    ") + "\n)"
    }

    /// The columns and table constraints, as written between the parentheses of `CREATE TABLE`.
    var definitionSQL: String { definitionItems.joined(separator: ",\n") }

    private var definitionItems: [String] {
        // A table-constraint `PRIMARY KEY("id")` on an INTEGER column makes `id` the rowid, as
        // the column-constraint form does.
        columns.map(\.definitionSQL)
            + (primaryKey.isEmpty ? [] : ["PRIMARY KEY (\(quotedList(primaryKey)))"])
            + uniqueConstraints.map { "UNIQUE (\(quotedList($0)))" }
            + foreignKeys.map(\.definitionSQL)
    }
}

extension DeclaredSchema.Column {
    /// The column as written in `CREATE TABLE` or `ALTER TABLE … ADD COLUMN`.
    var definitionSQL: String {
        var sql = Database.quoted(name)
        if !type.sql.isEmpty { sql += " " + type.sql }
        if isNotNull { sql += " NOT NULL" }
        if let defaultValue { sql += " DEFAULT " + defaultValue.definitionSQL }
        return sql
    }
}

extension DeclaredSchema.Index {
    /// The `CREATE INDEX` statement for the index on `table`.
    func createSQL(on table: String) -> String {
        "CREATE \(isUnique ? "UNIQUE " : "")INDEX \(Database.quoted(name)) ON \(Database.quoted(table)) "
            + "(\(quotedList(columns)))" + (condition.map { " WHERE \($0)" } ?? "")
    }
}

extension DeclaredSchema.ForeignKey {
    /// The foreign key as a table constraint.
    var definitionSQL: String {
        var sql = "FOREIGN KEY (\(quotedList(columns))) REFERENCES \(Database.quoted(parentTable))"
        if !parentColumns.isEmpty { sql += " (\(quotedList(parentColumns)))" }
        if onDelete != .noAction { sql += " ON DELETE \(onDelete.rawValue)" }
        if onUpdate != .noAction { sql += " ON UPDATE \(onUpdate.rawValue)" }
        return sql
    }
}

private func quotedList(_ names: [String]) -> String {
    names.map(Database.quoted).joined(separator: ", ")
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
