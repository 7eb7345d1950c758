import Foundation
import StoreMigrationsPostgreSQL

/// A schema's tables, data and the rest of its objects, read through libpq with the schema
/// first on the `search_path`, so that every definition comes unqualified and restores into a
/// schema of any name. Kept in a fixture as `dump.json`.
///
/// Covered, in the order the restore creates them:
/// - custom types: enums (labels in order), domains (base type, default, `NOT NULL`, checks),
///   composite types, range types (subtype, `subtype_diff`, multirange name), together with the
///   functions and procedures that do not need tables, in the order the server made them (so a
///   table's default or check, or a domain's, can call one);
/// - sequences (with their positions) and tables (column types, identity, `NOT NULL`,
///   defaults), with every row (as JSON, which PostgreSQL reads back with `json_populate_record`);
/// - primary keys and unique constraints, indexes, then views and the functions that need
///   tables (a `BEGIN ATOMIC` body reading one, a row type in the signature), then checks and
///   foreign keys, once the data is in;
/// - the `OWNED BY` link of `serial` columns' sequences;
/// - triggers (not the internal ones of foreign keys), created after the rows so that restoring
///   them fires none: a restored row is the row as it was, not as a trigger would remake it;
/// - privileges on the schema, its tables, views, sequences and routines given to roles other
///   than the owner (`GRANT … [WITH GRANT OPTION]`, after `REVOKE ALL … FROM PUBLIC`); those
///   roles must exist where the fixture is restored.
///
/// Function bodies are kept as written: a body that names its schema still names the original
/// one after a restore; a `SET search_path` naming it is made to name the new one. The
/// restoring role owns everything restored. Not covered: aggregates, column privileges,
/// default privileges, privileges on types, operators, collations, policies, rules, comments,
/// and a range type's operator class, collation or canonical function.
struct PostgreSQLDump: Codable {
    struct Table: Codable {
        var name: String
        var create: String
        /// Columns `GENERATED … AS IDENTITY`, whose sequences go on after the restored rows.
        var identityColumns: [String]
        /// Each row as `row_to_json`'s text.
        var rows: [String]
    }

    struct Sequence: Codable {
        var name: String
        var create: String
        var lastValue: Int64?
        var isCalled: Bool
    }

    var sequences: [Sequence]
    var tables: [Table]
    /// Created once the rows are in: keys and indexes, views and the functions that need
    /// tables, checks, foreign keys (a dump written before the functions had views last).
    var objects: [String]

    // The keys below came later: a dump written before has none, and restores without them.

    /// The schema's name when dumped, for functions whose `SET search_path` names it.
    var schema: String?
    /// Custom types, and the functions and procedures that tables' defaults and checks may
    /// call, in the order the server made them; created before the sequences.
    var definitions: [String]
    /// `ALTER SEQUENCE … OWNED BY`, for the sequences of `serial` columns; `nil` in a dump
    /// written before, whose restore gives each sequence named and used as a `serial`'s its
    /// column, as the original almost surely had.
    var sequenceOwners: [String]?
    /// Created last, so that restoring the rows fires none of them.
    var triggers: [String]
    /// Given again after everything else exists.
    var privileges: [PostgreSQLPrivileges]

    init(
        sequences: [Sequence], tables: [Table], objects: [String], schema: String?, definitions: [String],
        sequenceOwners: [String]?, triggers: [String], privileges: [PostgreSQLPrivileges]
    ) {
        self.sequences = sequences
        self.tables = tables
        self.objects = objects
        self.schema = schema
        self.definitions = definitions
        self.sequenceOwners = sequenceOwners
        self.triggers = triggers
        self.privileges = privileges
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        sequences = try container.decode([Sequence].self, forKey: .sequences)
        tables = try container.decode([Table].self, forKey: .tables)
        objects = try container.decode([String].self, forKey: .objects)
        schema = try container.decodeIfPresent(String.self, forKey: .schema)
        definitions = try container.decodeIfPresent([String].self, forKey: .definitions) ?? []
        sequenceOwners = try container.decodeIfPresent([String].self, forKey: .sequenceOwners)
        triggers = try container.decodeIfPresent([String].self, forKey: .triggers) ?? []
        privileges = try container.decodeIfPresent([PostgreSQLPrivileges].self, forKey: .privileges) ?? []
    }

    /// The roles the privileges are given to, which must exist where the dump is restored.
    var roles: [String] { Array(Set(privileges.flatMap { $0.grants.compactMap(\.role) })).sorted() }

    /// Reads `schema` on `db`.
    static func read(schema: String, on db: PostgreSQLConnection) throws -> PostgreSQLDump {
        try db.execute("SET LOCAL search_path TO \(PostgreSQLConnection.quoted(schema))")
        let quote = PostgreSQLConnection.quoted
        let catalogSequences = try PostgreSQLCatalog.sequences(in: schema, on: db)
        let sequences = try catalogSequences.map { sequence, _ -> Sequence in
            let position = try db.rows("SELECT last_value, is_called FROM \(quote(sequence.name))")
            return Sequence(
                name: sequence.name, create: sequence.create,
                lastValue: try position.first.map { try $0[0] as Int64 }, isCalled: try position.first.map { try $0[1] as Bool } ?? false)
        }
        let sequenceOwners = catalogSequences.compactMap { sequence, owner in
            owner.map { "ALTER SEQUENCE \(quote(sequence.name)) OWNED BY \($0)" }
        }
        let tables = try db.rows(
            """
            SELECT c.oid::int8, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') ORDER BY c.oid
            """, arguments: [.text(schema)]
        ).map { row -> Table in
            let oid: Int64 = try row[0]
            let name: String = try row[1]
            let columns = try db.rows(
                """
                SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.attidentity::text,
                    pg_get_expr(d.adbin, d.adrelid)
                FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
                WHERE a.attrelid = $1::int8::oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum
                """, arguments: [.integer(oid)]
            )
            let identityColumns = try columns.filter { try ($0[3] as String) != "" }.map { try $0[0] as String }
            let definitions = try columns.map { column -> String in
                var definition = "\(quote(try column[0] as String)) \(try column[1] as String)"
                switch try column[3] as String {
                case "a": definition += " GENERATED ALWAYS AS IDENTITY"
                case "d": definition += " GENERATED BY DEFAULT AS IDENTITY"
                default: if let expression = try column[4] as String? { definition += " DEFAULT \(expression)" }
                }
                if try column[2] as Bool { definition += " NOT NULL" }
                return definition
            }
            let rows = try db.rows("SELECT row_to_json(t)::text FROM \(quote(name)) AS t").map { try $0[0] as String }
            return Table(
                name: name, create: "CREATE TABLE \(quote(name)) (\(definitions.joined(separator: ", ")))",
                identityColumns: identityColumns, rows: rows)
        }
        let constraints = try db.rows(
            """
            SELECT k.contype::text, c.relname, k.conname, pg_get_constraintdef(k.oid)
            FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = $1 AND k.contype IN ('p', 'u', 'c', 'f', 'x')
            ORDER BY CASE k.contype WHEN 'p' THEN 0 WHEN 'u' THEN 1 WHEN 'x' THEN 1 WHEN 'c' THEN 2 ELSE 3 END, c.relname, k.conname
            """, arguments: [.text(schema)]
        ).map { row in
            (kind: try row[0] as String,
             statement: "ALTER TABLE \(quote(try row[1] as String)) ADD CONSTRAINT \(quote(try row[2] as String)) \(try row[3] as String)")
        }
        let indexes = try db.rows(
            """
            SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i
            JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = $1 AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)
            ORDER BY c.relname
            """, arguments: [.text(schema)]
        ).map { row in PostgreSQLCatalog.unqualified(try row[0] as String, schema: schema, after: [" ON "]) }
        let views = try db.rows(
            """
            SELECT c.oid::int8, c.relname, pg_get_viewdef(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = $1 AND c.relkind = 'v' ORDER BY c.oid
            """, arguments: [.text(schema)]
        ).map { row in
            PostgreSQLCatalog.Definition(
                name: try row[1], create: "CREATE VIEW \(quote(try row[1] as String)) AS \(try row[2] as String)", oid: try row[0])
        }
        let functions = try PostgreSQLCatalog.functions(in: schema, on: db)
        let early = (try PostgreSQLCatalog.types(in: schema, on: db) + functions.filter { !$0.needsTables }).sorted { $0.oid < $1.oid }
        // Keys before the views, which may group by them; views and the functions that need
        // tables in the order they were made, as either may use the other; checks may call
        // those functions; foreign keys may refer to unique indexes.
        let late = (views + functions.filter(\.needsTables)).sorted { $0.oid < $1.oid }
        let keys = constraints.filter { $0.kind != "c" && $0.kind != "f" }.map(\.statement)
        let checks = constraints.filter { $0.kind == "c" }.map(\.statement)
        let foreignKeys = constraints.filter { $0.kind == "f" }.map(\.statement)
        return PostgreSQLDump(
            sequences: sequences, tables: tables, objects: keys + indexes + late.map(\.create) + checks + foreignKeys,
            schema: schema, definitions: early.map(\.create), sequenceOwners: sequenceOwners,
            triggers: try PostgreSQLCatalog.triggers(in: schema, on: db).map(\.create),
            privileges: try PostgreSQLCatalog.privileges(in: schema, on: db))
    }

    /// Creates everything in `schema` (which must not exist) on `db`, inside the caller's
    /// transaction.
    func restore(schema: String, on db: PostgreSQLConnection) throws {
        let quote = PostgreSQLConnection.quoted
        // SQL functions' bodies may read tables made after them.
        try db.execute("CREATE SCHEMA \(quote(schema)); SET LOCAL search_path TO \(quote(schema)); SET LOCAL check_function_bodies = off")
        for definition in definitions { try db.execute(retargeted(definition, to: schema)) }
        for sequence in sequences { try db.execute(sequence.create) }
        for table in tables {
            try db.execute(table.create)
            // The row type qualified: pg_catalog, always searched first, has types named like
            // tables an app may have (`line`, `point`, `box`).
            let insert = "INSERT INTO \(quote(table.name)) OVERRIDING SYSTEM VALUE "
                + "SELECT * FROM json_populate_record(NULL::\(quote(schema)).\(quote(table.name)), $1::json)"
            for row in table.rows { try db.execute(insert, arguments: [.text(row)]) }
            for column in table.identityColumns {
                try db.execute(
                    "SELECT setval(pg_get_serial_sequence($1, $2), coalesce((SELECT max(\(quote(column))) FROM \(quote(table.name))), 0) + 1, false)",
                    arguments: [.text(quote(table.name)), .text(column)])
            }
        }
        for sequence in sequences {
            if let lastValue = sequence.lastValue {
                try db.execute("SELECT setval($1, $2, $3)", arguments: [.text(quote(sequence.name)), .integer(lastValue), .bool(sequence.isCalled)])
            }
        }
        for object in objects { try db.execute(retargeted(object, to: schema)) }
        for statement in (try sequenceOwners ?? serialSequenceOwners(on: db)) + triggers { try db.execute(statement) }
        for statement in privileges.flatMap({ $0.statements(schema: schema) }) { try db.execute(statement) }
    }

    /// `ALTER SEQUENCE … OWNED BY` for each sequence of the current schema that a column's
    /// default takes its values from, and that is named as `serial` names them (`table_column_seq`).
    private func serialSequenceOwners(on db: PostgreSQLConnection) throws -> [String] {
        try db.rows(
            """
            SELECT format('ALTER SEQUENCE %I OWNED BY %I.%I', s.relname, t.relname, a.attname)
            FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
            JOIN pg_class t ON t.oid = d.adrelid
            JOIN pg_depend u ON u.classid = 'pg_attrdef'::regclass AND u.objid = d.oid AND u.refclassid = 'pg_class'::regclass
            JOIN pg_class s ON s.oid = u.refobjid AND s.relkind = 'S'
            WHERE t.relnamespace = current_schema()::regnamespace AND s.relname = t.relname || '_' || a.attname || '_seq'
                AND pg_get_expr(d.adbin, d.adrelid) = format('nextval(%L::regclass)', quote_ident(s.relname))
            ORDER BY s.relname
            """
        ).map { try $0[0] as String }
    }

    /// `statement`, a function's definition, with its `SET search_path` naming `target` where it
    /// named the dumped schema.
    private func retargeted(_ statement: String, to target: String) -> String {
        guard let schema, statement.hasPrefix("CREATE OR REPLACE ") else { return statement }
        return PostgreSQLCatalog.retargeted(statement, from: schema, to: target)
    }
}
