import Foundation
import StoreMigrationsPostgreSQL

/// Reads the definitions of a schema's objects from the catalog, for the dump to restore and
/// for snapshots to compare, so that both see the same text. Every query expects the schema
/// first on the `search_path`, so that definitions come unqualified.
enum PostgreSQLCatalog {
    /// An object and the statement that creates it.
    struct Definition {
        /// What it is, for a snapshot: `type status`, `function positive(numeric)`.
        var name: String
        var create: String
        /// Made by the server before or after the objects around it: types and functions are
        /// created in that order.
        var oid: Int64
        /// A function that needs tables (a `BEGIN ATOMIC` body reading one, a table's row type in
        /// its signature), created with the views instead of before the tables.
        var needsTables = false
    }

    /// Sequences that are not identity columns', with the column that owns one (a `serial`'s).
    static func sequences(in schema: String, on db: PostgreSQLConnection) throws -> [(definition: Definition, ownedBy: String?)] {
        let quote = PostgreSQLConnection.quoted
        return try db.rows(
            """
            SELECT c.oid::int8, c.relname, format_type(s.seqtypid, NULL), s.seqincrement, s.seqstart, s.seqmin, s.seqmax,
                (SELECT format('%s.%s', quote_ident(t.relname), quote_ident(a.attname)) FROM pg_depend d
                    JOIN pg_class t ON t.oid = d.refobjid JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid
                    WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.refclassid = 'pg_class'::regclass AND d.deptype = 'a')
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_sequence s ON s.seqrelid = c.oid
            WHERE n.nspname = $1 AND c.relkind = 'S'
                AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype = 'i')
            ORDER BY c.relname
            """, arguments: [.text(schema)]
        ).map { row in
            let name: String = try row[1]
            let type: String = try row[2]
            let increment: Int64 = try row[3], start: Int64 = try row[4], min: Int64 = try row[5], max: Int64 = try row[6]
            let create = "CREATE SEQUENCE \(quote(name)) AS \(type) INCREMENT \(increment) MINVALUE \(min) MAXVALUE \(max) START \(start)"
            return (Definition(name: name, create: create, oid: try row[0]), try row[7] as String?)
        }
    }

    /// Enums, domains, standalone composite types and range types, in the order they were made.
    ///
    /// Catalog columns newer than PostgreSQL 13 (a range's multirange, a partition trigger's
    /// parent) are read through `to_jsonb` of the row, so that an older server reads them as
    /// absent rather than failing the query.
    static func types(in schema: String, on db: PostgreSQLConnection) throws -> [Definition] {
        try db.rows(
            """
            SELECT t.oid::int8, t.typname, CASE t.typtype
                WHEN 'e' THEN format('CREATE TYPE %I AS ENUM (%s)', t.typname,
                    (SELECT string_agg(quote_literal(e.enumlabel), ', ' ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid))
                WHEN 'd' THEN format('CREATE DOMAIN %I AS %s', t.typname, format_type(t.typbasetype, t.typtypmod))
                    || coalesce(' DEFAULT ' || pg_get_expr(t.typdefaultbin, 0), '') || CASE WHEN t.typnotnull THEN ' NOT NULL' ELSE '' END
                    || coalesce((SELECT string_agg(format(' CONSTRAINT %I %s', k.conname, pg_get_constraintdef(k.oid)), '' ORDER BY k.conname)
                        FROM pg_constraint k WHERE k.contypid = t.oid AND k.contype = 'c'), '')
                WHEN 'c' THEN format('CREATE TYPE %I AS (%s)', t.typname,
                    (SELECT string_agg(format('%I %s', a.attname, format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY a.attnum)
                        FROM pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped))
                ELSE (SELECT format('CREATE TYPE %I AS RANGE (SUBTYPE = %s%s%s)', t.typname, format_type(r.rngsubtype, NULL),
                        coalesce(', MULTIRANGE_TYPE_NAME = ' || quote_ident(m.typname), ''),
                        CASE WHEN r.rngsubdiff <> 0 THEN ', SUBTYPE_DIFF = ' || r.rngsubdiff::regproc::text ELSE '' END)
                    FROM pg_range r LEFT JOIN pg_type m ON m.oid = (to_jsonb(r) ->> 'rngmultitypid')::oid WHERE r.rngtypid = t.oid)
                END
            FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
            WHERE n.nspname = $1
                AND (t.typtype IN ('e', 'd', 'r') OR (t.typtype = 'c' AND (SELECT c.relkind FROM pg_class c WHERE c.oid = t.typrelid) = 'c'))
                AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_type'::regclass AND d.objid = t.oid AND d.deptype = 'e')
            ORDER BY t.oid
            """, arguments: [.text(schema)]
        ).map { row in Definition(name: "type \(try row[1] as String)", create: try row[2], oid: try row[0]) }
    }

    /// Functions and procedures (not aggregates, nor those a range type or an extension makes),
    /// as `pg_get_functiondef` gives them, their name unqualified.
    static func functions(in schema: String, on db: PostgreSQLConnection) throws -> [Definition] {
        try db.rows(
            """
            SELECT p.oid::int8, p.oid::regprocedure::text, pg_get_functiondef(p.oid),
                EXISTS (SELECT 1 FROM pg_depend d
                    LEFT JOIN pg_type ty ON d.refclassid = 'pg_type'::regclass AND ty.oid = d.refobjid
                    LEFT JOIN pg_type element ON element.oid = ty.typelem
                    LEFT JOIN pg_class tc ON tc.oid = coalesce(nullif(ty.typrelid, 0), element.typrelid)
                    WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                        AND (d.refclassid = 'pg_class'::regclass OR tc.relkind IN ('r', 'p', 'v', 'm', 'f')))
            FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
            WHERE n.nspname = $1 AND p.prokind IN ('f', 'p')
                AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype IN ('i', 'e'))
            ORDER BY p.oid
            """, arguments: [.text(schema)]
        ).map { row in
            let definition = unqualified(try row[2] as String, schema: schema, after: ["FUNCTION ", "PROCEDURE "])
            return Definition(name: "function \(try row[1] as String)", create: definition, oid: try row[0], needsTables: try row[3])
        }
    }

    /// Triggers users made (not those behind foreign keys, nor partitions' clones of a parent's).
    static func triggers(in schema: String, on db: PostgreSQLConnection) throws -> [Definition] {
        try db.rows(
            """
            SELECT t.oid::int8, t.tgname, c.relname, pg_get_triggerdef(t.oid)
            FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = $1 AND NOT t.tgisinternal AND coalesce((to_jsonb(t) ->> 'tgparentid')::oid, 0) = 0
            ORDER BY c.relname, t.tgname
            """, arguments: [.text(schema)]
        ).map { row in
            Definition(
                name: "trigger \(try row[1] as String) on \(try row[2] as String)",
                create: unqualified(try row[3] as String, schema: schema, after: [" ON "]), oid: try row[0])
        }
    }

    /// Privileges given on the schema and on the tables, views, sequences and routines the dump
    /// keeps, to roles other than the object's owner: objects whose ACL was never changed are
    /// left out, and so are identity columns' sequences, which a restore names after their
    /// table and column (a table renamed since keeps a sequence of its old name).
    static func privileges(in schema: String, on db: PostgreSQLConnection) throws -> [PostgreSQLPrivileges] {
        let rows = try db.rows(
            """
            WITH objects AS (
                SELECT 0 AS rank, NULL::text AS object, n.nspowner AS owner, n.nspacl AS acl FROM pg_namespace n
                WHERE n.nspname = $1 AND n.nspacl IS NOT NULL
                UNION ALL
                SELECT 1, CASE c.relkind WHEN 'S' THEN 'SEQUENCE ' ELSE 'TABLE ' END || quote_ident(c.relname), c.relowner, c.relacl
                FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'S') AND c.relacl IS NOT NULL
                    AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'i')
                UNION ALL
                SELECT 2, 'ROUTINE ' || p.oid::regprocedure::text, p.proowner, p.proacl
                FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE n.nspname = $1 AND p.prokind IN ('f', 'p') AND p.proacl IS NOT NULL
                    AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype IN ('i', 'e'))
            )
            SELECT o.rank, o.object, a.privilege_type, CASE WHEN a.grantee = 0 THEN NULL ELSE pg_get_userbyid(a.grantee) END, a.is_grantable
            FROM objects o LEFT JOIN LATERAL aclexplode(o.acl) a ON a.grantee <> o.owner
            ORDER BY o.rank, o.object, 4 NULLS FIRST, 3
            """, arguments: [.text(schema)])
        var privileges: [PostgreSQLPrivileges] = []
        var current: (rank: Int64, object: String?)?
        for row in rows {
            let rank: Int64 = try row[0]
            let object: String? = try row[1]
            if current?.rank != rank || current?.object != object {
                privileges.append(PostgreSQLPrivileges(object: object, grants: []))
                current = (rank, object)
            }
            if let privilege = try row[2] as String? {
                privileges[privileges.count - 1].grants.append(
                    PostgreSQLPrivileges.Grant(privilege: privilege, role: try row[3], grantable: try row[4]))
            }
        }
        return privileges
    }

    /// `definition` without its schema where the server qualifies names whatever the search
    /// path: after `CREATE FUNCTION`, after a trigger's or an index's `ON`.
    static func unqualified(_ definition: String, schema: String, after keywords: [String]) -> String {
        var definition = definition
        for keyword in keywords {
            for qualified in [PostgreSQLConnection.quoted(schema), schema] {
                definition = definition.replacingOccurrences(of: keyword + qualified + ".", with: keyword)
            }
        }
        return definition
    }

    /// `definition` (a function's) with its `SET search_path` naming `target` where it named
    /// `schema`: the body itself is kept as written.
    static func retargeted(_ definition: String, from schema: String, to target: String) -> String {
        let literal = { (name: String) in "'" + name.replacingOccurrences(of: "'", with: "''") + "'" }
        var inHeader = true
        let lines = definition.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            if line.hasPrefix("AS ") || line.hasPrefix("BEGIN ATOMIC") || line.hasPrefix(" RETURN ") { inHeader = false }
            guard inHeader, line.hasPrefix(" SET search_path TO ") else { return String(line) }
            let values = line.dropFirst(" SET search_path TO ".count).components(separatedBy: ", ")
            return " SET search_path TO " + values.map { $0 == literal(schema) ? literal(target) : $0 }.joined(separator: ", ")
        }
        return lines.joined(separator: "\n")
    }
}
