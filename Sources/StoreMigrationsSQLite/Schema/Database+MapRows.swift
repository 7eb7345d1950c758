#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import StoreMigrations

extension Database {
    /// Renames `table` out of the way of the declared table of the same name, for an entity
    /// mapping to read, and returns its temporary name.
    ///
    /// Its indexes and triggers are dropped first: their names must be free for the new tables',
    /// and the table is only read from now on. The legacy rename leaves the views, triggers and
    /// foreign keys that name `table` pointing at that name, which the new table takes.
    func setAsideForMapping(_ table: String) throws -> String {
        guard let table = try canonicalTableName(table) else { throw noSuchTable(table) }
        let objects = try rows(
            "SELECT type, name FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', 'trigger') AND sql IS NOT NULL",
            arguments: [.text(table)])
        for object in objects {
            let type: String = try object["type"]
            try execute("DROP \(type.uppercased()) \(Self.quoted(try object["name"]))")
        }
        let temporary = try unusedTableName(startingWith: "store_migrations_source_\(table)")
        try renameTableLeavingReferences(table, to: temporary)
        return temporary
    }

    /// Streams the rows of `table` through `mapping` into `destination` with one statement, in
    /// the table's key order, calling `progress` with the number of rows mapped after each batch.
    func mapRows(
        of table: String, through mapping: EntityMapping, into destination: MappingDestination,
        progress: (Int) -> Void
    ) throws {
        let selection = mapping.columns.map { $0.map(Self.quoted).joined(separator: ", ") } ?? "*"
        let select = try prepare("SELECT \(selection) FROM \(Self.quoted(table))")
        try select.bind([])
        defer { select.reset() }
        let transform = mapping.transform
        var inBatch = 0
        while let row = try select.step() {
            try transform(row, destination)
            inBatch += 1
            if inBatch == mapping.batchSize {
                progress(inBatch)
                inBatch = 0
                try context?.checkCancellation()
            }
        }
        progress(inBatch)
    }

    /// Maps at most `limit` rows of `table` after `lastKey` (from its first row when `nil`), in
    /// key order, and returns how many it mapped and the key of the last one: a batch of a
    /// resumable schema migration. The table's key columns are added to what `mapping` reads
    /// when it does not list them.
    func mapRows(
        of table: String, through mapping: EntityMapping, into destination: MappingDestination,
        after lastKey: [DatabaseValue]?, limit: Int
    ) throws -> (visited: Int, lastKey: [DatabaseValue]?) {
        let info = try tableInfo(table)
        let key = try pagingKey(of: table, columns: info)
        let selected = mapping.columns ?? info.map(\.name)
        let unlistedKey = key.filter { column in !selected.contains { sameName($0, column) } }
        let selection = (mapping.columns.map { $0.map(Self.quoted) } ?? ["*"]) + unlistedKey.map(Self.quoted)
        let keyList = key.map(Self.quoted).joined(separator: ", ")
        var sql = "SELECT \(selection.joined(separator: ", ")) FROM \(Self.quoted(table))"
        var arguments: [DatabaseValue] = []
        if let lastKey {
            guard lastKey.count == key.count else {
                throw error(
                    code: SQLITE_MISUSE,
                    message: "the recorded cursor \(RowTransformer.cursor(after: lastKey)) does not fit the key of table "
                        + "\(table) (\(key.joined(separator: ", ")))",
                    sql: nil)
            }
            sql += " WHERE (\(keyList)) > (\(key.map { _ in "?" }.joined(separator: ", ")))"
            arguments = lastKey
        }
        sql += " ORDER BY \(keyList) LIMIT ?"
        arguments.append(.integer(Int64(max(1, limit))))
        let transform = mapping.transform
        var visited = 0
        var last: Row?
        try prepare(sql).forEachRow(arguments: arguments) { row in
            try transform(row, destination)
            visited += 1
            last = row
        }
        guard let last else { return (0, nil) }
        let positions = key.map { column in last.columnNames.lastIndex { sameName($0, column) }! }
        return (visited, positions.map { last.values[$0] })
    }

    /// Drops the set-aside `tables`, those referring to others first.
    func dropSetAside(_ tables: [String]) throws {
        let ordered = try SchemaDiff.childrenFirst(tables) { child, parent in
            try foreignKeysReferring(to: parent).contains { sameName($0.child, child) }
        }
        for table in ordered { try execute("DROP TABLE \(Self.quoted(table))") }
    }
}
