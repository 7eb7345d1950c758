import StoreMigrations

/// The changes that take a database from its live schema to a declared one, in the order they
/// run, and what stands in the way of making them by inference.
///
/// Phases, so that no change meets a name another has yet to free: drop indexes, rename tables,
/// change each kept table (rename, drop and add columns, then one rebuild if needed), create
/// tables, drop tables, map rows, create indexes (after the rows, which is faster than indexing
/// row by row).
struct SchemaDiff {
    /// A table or column to be dropped, to hold against the data-loss policy.
    struct Drop {
        /// The table's name in the database, where its data is checked.
        let liveTable: String
        /// The table's name in the declaration, if it keeps the table.
        let declaredTable: String?
        let column: String?
        /// What the declaration adds alongside, in case the drop is a rename without its
        /// renaming identifier.
        let added: [String]
    }

    private(set) var changes: [SchemaChange] = []
    /// Changes only a mapped migration can make.
    private(set) var uninferable: [SchemaMigrationError.Problem] = []
    /// Tables that must be rebuilt but have features the declaration cannot describe.
    private(set) var unrebuildable: [(table: String, features: [String])] = []
    private(set) var drops: [Drop] = []

    private let db: Database
    private let declaredSchema: DeclaredSchema
    /// Declared names of the live tables, by lowercased live name.
    private var tableNames: [String: String] = [:]
    /// Declared names of the live columns, by lowercased live table name, then column name.
    private var columnNames: [String: [String: String]] = [:]

    /// Compares `live` (without the tables set aside for mapping) with `declared`; asks `db`
    /// only whether tables and columns hold data.
    init(from live: DeclaredSchema, to declared: DeclaredSchema, mapping sources: Set<String>, in db: Database) throws {
        self.db = db
        self.declaredSchema = declared
        let liveTables = live.tables.filter { !sources.contains($0.name.lowercased()) }
        let tables = NameMatching(
            declared: declared.tables.map { ($0.name, $0.renamedFrom) }, live: liveTables.map(\.name))
        for split in tables.splits {
            let names = split.declared.map { declared.tables[$0].name }.joined(separator: " and ")
            uninferable.append(.init(
                table: liveTables[split.live].name, column: nil,
                message: "is the renaming identifier of tables \(names): splitting a table needs a mapped migration"))
        }

        var columnMatches: [Int: NameMatching] = [:]
        for (index, table) in declared.tables.enumerated() {
            guard let liveIndex = tables.liveIndex[index] else { continue }
            let liveTable = liveTables[liveIndex]
            let match = NameMatching(
                declared: table.columns.map { ($0.name, $0.renamedFrom) }, live: liveTable.columns.map(\.name))
            columnMatches[index] = match
            tableNames[liveTable.name.lowercased()] = table.name
            var names: [String: String] = [:]
            for (column, live) in match.liveIndex.enumerated() {
                if let live { names[liveTable.columns[live].name.lowercased()] = table.columns[column].name }
            }
            columnNames[liveTable.name.lowercased()] = names
        }

        var dropIndexes: [SchemaChange] = []
        var alterTables: [SchemaChange] = []
        var createTables: [SchemaChange] = []
        var createIndexes: [SchemaChange] = []
        for (index, table) in declared.tables.enumerated() {
            guard let liveIndex = tables.liveIndex[index], let match = columnMatches[index] else {
                createTables.append(.createTable(table))
                createIndexes += table.indexes.map { .createIndex($0, table: table.name) }
                continue
            }
            let liveTable = liveTables[liveIndex]
            let (dropped, created) = indexChanges(from: liveTable, to: table)
            dropIndexes += dropped
            createIndexes += created
            alterTables += try tableChanges(from: liveTable, to: table, columns: match)
        }

        let createdNames = declared.tables.indices.filter { tables.liveIndex[$0] == nil }.map { declared.tables[$0].name }
        let droppedTables = tables.unclaimedLive.map { liveTables[$0] }
        for table in droppedTables {
            drops.append(Drop(liveTable: table.name, declaredTable: nil, column: nil, added: createdNames))
        }
        changes = dropIndexes
            + tables.renames.map { .renameTable(liveTables[$0.live].name, to: declared.tables[$0.declared].name) }
            + alterTables
            + createTables
            + Self.childrenFirst(droppedTables) { child, parent in
                child.foreignKeys.contains { $0.parentTable.isSameSQLName(as: parent.name) }
            }.map { .dropTable($0.name) }
            + live.tables.filter { sources.contains($0.name.lowercased()) }.map { .mapRows(from: $0.name) }
            + createIndexes
    }

    /// The changes of a table the declaration keeps, ALTER TABLE first, then one rebuild for
    /// what ALTER TABLE cannot do.
    private mutating func tableChanges(
        from live: DeclaredSchema.Table, to declared: DeclaredSchema.Table, columns match: NameMatching
    ) throws -> [SchemaChange] {
        let table = declared.name
        for split in match.splits {
            let names = split.declared.map { declared.columns[$0].name }.joined(separator: " and ")
            uninferable.append(.init(
                table: table, column: live.columns[split.live].name,
                message: "is the renaming identifier of columns \(names): splitting a column needs a mapped migration"))
        }
        var changes: [SchemaChange] = match.renames.map {
            .renameColumn(live.columns[$0.live].name, to: declared.columns[$0.declared].name, table: table)
        }

        var reasons: [SchemaChange.RebuildReason] = []
        var added: [DeclaredSchema.Column] = []
        for (index, column) in declared.columns.enumerated() {
            guard let liveIndex = match.liveIndex[index] else {
                added.append(column)
                continue
            }
            let old = live.columns[liveIndex]
            let typeChanges = SQLTokenizer(old.type.sql).normalized() != SQLTokenizer(column.type.sql).normalized()
            if typeChanges, try db.hasValues(in: old.name, of: live.name) {
                uninferable.append(.init(
                    table: table, column: column.name,
                    message: "changes type from \(old.type.sql.isEmpty ? "none" : old.type.sql) to "
                        + "\(column.type.sql.isEmpty ? "none" : column.type.sql) while it holds values: "
                        + "convert them in a mapped migration"))
            }
            if column.isNotNull, !old.isNotNull, column.defaultValue == nil, try db.hasNulls(in: old.name, of: live.name) {
                uninferable.append(.init(
                    table: table, column: column.name,
                    message: "becomes NOT NULL without a default while rows hold NULL in it: declare a "
                        + "default for them to take, or fill them in a mapped migration"))
            }
            if typeChanges || column.isNotNull != old.isNotNull || column.defaultValue != old.defaultValue {
                let renamed = DeclaredSchema.Column(
                    name: column.name, type: old.type, isNotNull: old.isNotNull, defaultValue: old.defaultValue,
                    renamedFrom: nil)
                reasons.append(.alterColumn(from: renamed, to: column))
            }
        }

        var alterable: [DeclaredSchema.Column] = []
        for column in added {
            // ALTER TABLE adds a NOT NULL column only with a non-NULL default, and no default
            // that is an expression.
            let defaultIsLiteral = column.defaultValue.map { $0.value != nil } ?? !column.isNotNull
            if defaultIsLiteral {
                alterable.append(column)
                continue
            }
            if column.isNotNull, column.defaultValue == nil, try db.hasRows(in: live.name) {
                uninferable.append(.init(
                    table: table, column: column.name,
                    message: "is a new NOT NULL column without a default in a table with rows: declare a "
                        + "default for the existing rows"))
            }
            reasons.append(.addColumn(column))
        }

        let livePrimaryKey = live.primaryKey.map(renamedColumn(of: live.name))
        if !sameNames(livePrimaryKey, declared.primaryKey) {
            if try db.hasRows(in: live.name) {
                uninferable.append(.init(
                    table: table, column: nil,
                    message: "changes its primary key from (\(livePrimaryKey.joined(separator: ", "))) to "
                        + "(\(declared.primaryKey.joined(separator: ", "))) while it has rows: copy them to "
                        + "the new key in a mapped migration"))
            }
            reasons.append(.changePrimaryKey(from: livePrimaryKey, to: declared.primaryKey))
        }

        let liveUniques = live.uniqueConstraints.map { $0.map(renamedColumn(of: live.name)) }
        reasons += declared.uniqueConstraints.filter { unique in !liveUniques.contains { sameNames($0, unique) } }
            .map { .addUnique($0) }
        reasons += liveUniques.filter { unique in !declared.uniqueConstraints.contains { sameNames($0, unique) } }
            .map { .dropUnique($0) }

        let liveKeys = live.foreignKeys.map { renamedForeignKey($0, of: live.name) }
        reasons += declared.foreignKeys.filter { key in !liveKeys.contains { sameForeignKey($0, key) } }
            .map { .addForeignKey($0) }
        reasons += liveKeys.filter { key in !declared.foreignKeys.contains { sameForeignKey($0, key) } }
            .map { .dropForeignKey($0) }

        let dropped = match.unclaimedLive.map { live.columns[$0].name }
        for column in dropped {
            drops.append(Drop(liveTable: live.name, declaredTable: table, column: column, added: added.map(\.name)))
        }
        if reasons.isEmpty {
            changes += dropped.map { .dropColumn($0, table: table) }
            changes += alterable.map { .addColumn($0, table: table) }
        } else {
            let features = try db.undeclarableFeatures(of: live.name)
            if !features.isEmpty { unrebuildable.append((table, features)) }
            changes.append(.rebuildTable(
                declared, reasons: dropped.map { .dropColumn($0) } + alterable.map { .addColumn($0) } + reasons))
        }
        return changes
    }

    /// The indexes to drop (removed or changed) and to create (new or changed).
    private func indexChanges(
        from live: DeclaredSchema.Table, to declared: DeclaredSchema.Table
    ) -> (dropped: [SchemaChange], created: [SchemaChange]) {
        var dropped: [SchemaChange] = []
        var created: [SchemaChange] = []
        for index in live.indexes {
            let kept = declared.indexes.first { $0.name.isSameSQLName(as: index.name) }
            let unchanged = kept.map { kept in
                kept.isUnique == index.isUnique
                    && sameNames(index.columns.map(renamedColumn(of: live.name)), kept.columns)
                    && kept.condition.map { SQLTokenizer($0).normalized() }
                        == index.condition.map { SQLTokenizer($0).normalized() }
            } ?? false
            if !unchanged { dropped.append(.dropIndex(index.name, table: live.name)) }
            if let kept, !unchanged { created.append(.createIndex(kept, table: declared.name)) }
        }
        for index in declared.indexes where !live.indexes.contains(where: { $0.name.isSameSQLName(as: index.name) }) {
            created.append(.createIndex(index, table: declared.name))
        }
        return (dropped, created)
    }

    /// The declared name of a live column of `table`, or its own name if it is dropped.
    private func renamedColumn(of table: String) -> (String) -> String {
        let names = columnNames[table.lowercased()] ?? [:]
        return { names[$0.lowercased()] ?? $0 }
    }

    /// A live foreign key with the declared names of its columns, parent table and parent
    /// columns, which `ALTER TABLE … RENAME` updates.
    private func renamedForeignKey(_ key: DeclaredSchema.ForeignKey, of table: String) -> DeclaredSchema.ForeignKey {
        .foreignKey(
            key.columns.map(renamedColumn(of: table)),
            references: tableNames[key.parentTable.lowercased()] ?? key.parentTable,
            columns: key.parentColumns.map(renamedColumn(of: key.parentTable)),
            onDelete: key.onDelete, onUpdate: key.onUpdate)
    }

    /// Whether two foreign keys (with declared names) are the same; a key written without
    /// parent columns refers to the parent's primary key.
    private func sameForeignKey(_ left: DeclaredSchema.ForeignKey, _ right: DeclaredSchema.ForeignKey) -> Bool {
        func parentColumns(_ key: DeclaredSchema.ForeignKey) -> [String] {
            key.parentColumns.isEmpty
                ? declaredSchema.table(named: key.parentTable)?.primaryKey ?? [] : key.parentColumns
        }
        return sameNames(left.columns, right.columns) && left.parentTable.isSameSQLName(as: right.parentTable)
            && sameNames(parentColumns(left), parentColumns(right))
            && left.onDelete == right.onDelete && left.onUpdate == right.onUpdate
    }

    private func sameNames(_ left: [String], _ right: [String]) -> Bool {
        left.count == right.count && zip(left, right).allSatisfy { $0.isSameSQLName(as: $1) }
    }

    /// `items` ordered so that one referring to another comes first: tables dropped in this
    /// order with foreign keys enforced never leave a row pointing at a dropped table.
    static func childrenFirst<Item>(_ items: [Item], refersTo: (Item, Item) throws -> Bool) rethrows -> [Item] {
        var remaining = Array(items.enumerated())
        var ordered: [Item] = []
        while !remaining.isEmpty {
            let next = try remaining.firstIndex { candidate in
                try !remaining.contains { other in
                    try other.offset != candidate.offset && refersTo(other.element, candidate.element)
                }
            } ?? 0  // items referring to each other in a cycle: any order
            ordered.append(remaining.remove(at: next).element)
        }
        return ordered
    }
}

extension Database {
    func hasRows(in table: String) throws -> Bool {
        try scalar("SELECT EXISTS (SELECT 1 FROM \(Self.quoted(table)))", as: Bool.self) ?? false
    }

    func hasValues(in column: String, of table: String) throws -> Bool {
        try scalar(
            "SELECT EXISTS (SELECT 1 FROM \(Self.quoted(table)) WHERE \(Self.quoted(column)) IS NOT NULL)",
            as: Bool.self) ?? false
    }

    func hasNulls(in column: String, of table: String) throws -> Bool {
        try scalar(
            "SELECT EXISTS (SELECT 1 FROM \(Self.quoted(table)) WHERE \(Self.quoted(column)) IS NULL)",
            as: Bool.self) ?? false
    }

    /// What the `CREATE TABLE` statement of `table` holds that a declared schema cannot
    /// describe, and a rebuild from a declaration would therefore lose.
    func undeclarableFeatures(of table: String) throws -> [String] {
        guard
            let sql = try scalar(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", arguments: [.text(table)],
                as: String.self)
        else { return [] }
        let tokens = SQLTokenizer(sql).tokens()
        var features: [String] = []
        for (index, token) in tokens.enumerated() {
            let feature: String?
            switch token.kind == .identifier(quoted: false) ? token.value.uppercased() : "" {
            case "CHECK": feature = "a CHECK constraint"
            case "COLLATE": feature = "a collation"
            case "AUTOINCREMENT": feature = "AUTOINCREMENT"
            case "GENERATED": feature = "a generated column"
            case "AS" where tokens.indices.contains(index + 1) && tokens[index + 1].kind == .openParenthesis:
                feature = "a generated column"
            case "WITHOUT": feature = "WITHOUT ROWID"
            case "STRICT": feature = "STRICT typing"
            case "DEFERRABLE": feature = "a deferrable foreign key"
            case "CONFLICT": feature = "an ON CONFLICT clause"
            case "MATCH": feature = "a MATCH clause"
            case "ASC", "DESC": feature = "a key sort order"
            default: feature = nil
            }
            if let feature, !features.contains(feature) { features.append(feature) }
        }
        return features
    }
}
