import StoreMigrations

extension DeclaredSchema {
    /// What contradicts itself in the declaration, each problem naming its table and column.
    func problems() -> [SchemaMigrationError.Problem] {
        var problems: [SchemaMigrationError.Problem] = []
        func report(_ table: String, _ column: String? = nil, _ message: String) {
            problems.append(.init(table: table, column: column, message: message))
        }

        var tableNames: [String: String] = [:]
        var indexOwners: [String: String] = [:]
        tableNames.reserveCapacity(tables.count)
        indexOwners.reserveCapacity(tables.reduce(0) { $0 + $1.indexes.count })
        // Each name is hashed once (`updateValue` answers whether it was there), and tables and
        // columns are read in place, field by field: a creation from the declared schema checks
        // hundreds of tables, and copying each table and column cost it as much as the checks.
        for position in tables.indices {
            let name = tables[position].name
            let key = name.lowercased()
            let declaredBefore = tableNames.updateValue(name, forKey: key) != nil
            if name.isEmpty || key.hasPrefix("sqlite_") {
                report(name, nil, "has a name SQLite reserves or refuses; choose another")
            } else if [SQLiteStore.levelsTable, SQLiteStore.historyTable].contains(key) {
                report(name, nil, "is a table of the migration store itself; choose another name")
            } else if declaredBefore {
                report(name, nil, "is declared twice; merge the two declarations")
            }
            for index in tables[position].indexes.indices {
                let indexName = tables[position].indexes[index].name
                if let owner = indexOwners.updateValue(name, forKey: indexName.lowercased()) {
                    report(name, nil, "declares index \(indexName), a name table \(owner) also gives an "
                        + "index; index names are unique in a database")
                }
            }
        }
        // Walked from the tables, of which a schema has fewer than indexes.
        for name in tableNames.keys {
            if let owner = indexOwners[name] { report(owner, nil, "declares index \(name), which is also the name of a table") }
        }

        for table in tables {
            if table.columns.isEmpty { report(table.name, nil, "declares no column; a table needs one") }
            // The few columns of a table compared pairwise; a set, which hashes every name, only
            // for a wide one.
            let names = table.columns.map { $0.name.lowercased() }
            var seen = Set<String>()
            for position in names.indices {
                let isRepeated = names.count <= 32
                    ? names[..<position].contains(names[position]) : !seen.insert(names[position]).inserted
                let name = table.columns[position].name
                if isRepeated || name.isEmpty {
                    report(table.name, name, name.isEmpty ? "has an empty name" : "is declared twice")
                }
            }
            // `what` is written only for a problem: a creation from the declared schema checks
            // every index and key of hundreds of tables, nearly always finding none.
            func check(_ columns: [String], of table: Table, as what: @autoclosure () -> String) {
                if columns.isEmpty { report(table.name, nil, "has \(what()) without columns") }
                if columns.count > 1, Set(columns.map { $0.lowercased() }).count < columns.count {
                    report(table.name, nil, "has \(what()) that lists a column twice")
                }
                for column in columns where !table.columns.contains(where: { $0.name.isSameSQLName(as: column) }) {
                    report(table.name, column, "is named in \(what()) but the table does not declare it")
                }
            }
            if !table.primaryKey.isEmpty { check(table.primaryKey, of: table, as: "the primary key") }
            for unique in table.uniqueConstraints {
                check(unique, of: table, as: "unique (\(unique.joined(separator: ", ")))")
            }
            for index in table.indexes { check(index.columns, of: table, as: "index \(index.name)") }
            for key in table.foreignKeys {
                check(key.columns, of: table, as: "\(key)")
                guard let parent = self.table(named: key.parentTable) else {
                    report(table.name, nil, "has \(key), but the schema declares no table \(key.parentTable); "
                        + "declare it, or remove the foreign key")
                    continue
                }
                if !key.parentColumns.isEmpty {
                    check(key.parentColumns, of: parent, as: "\(key) of table \(table.name)")
                    if key.parentColumns.count != key.columns.count {
                        report(table.name, nil, "has \(key), which refers to \(key.parentColumns.count) columns "
                            + "with \(key.columns.count)")
                    }
                } else if parent.primaryKey.count != key.columns.count {
                    report(table.name, nil, "has \(key), which refers to the primary key of \(parent.name), "
                        + "of \(parent.primaryKey.count) columns, with \(key.columns.count)")
                }
            }
        }
        return problems
    }
}
