import CLibPQ
import Foundation
import StoreMigrations

/// What the store checks about the statements of a transactional step's body while it runs:
/// armed by ``PostgreSQLStore`` for the length of the body, it refuses a statement that ends the
/// step's transaction and, in a batch of a resumable migration, one that changes the schema.
///
/// Why after each statement rather than by reading the SQL first: the server runs what it is
/// sent, and SQL text says little for sure (a multi-statement string, a `DO` block, a function
/// that runs DDL). PostgreSQL's DDL is transactional, so a refused statement's change is undone
/// with the step's transaction; only `COMMIT` escapes, and it is refused before anything else
/// runs: from then on every statement fails with the same error before it is sent, so a body
/// that catches errors with `try?` cannot go on in autocommit.
///
/// **Transaction control** is read from the command tag the server returns for each statement
/// (`BEGIN`, `COMMIT`, `PREPARE TRANSACTION`, …) and from the connection falling back to idle
/// (a `ROLLBACK`, whose tag a `ROLLBACK TO SAVEPOINT` shares). Savepoints stay usable.
///
/// **Schema changes** are what the transaction wrote to the system catalogs: the server counts
/// the session's inserted, updated and deleted rows per table (`pg_stat_xact_sys_tables`, this
/// transaction's subtransactions included, earlier transactions' until the server flushes them,
/// hence a first read before the body to compare with), which costs one short query. Rows of
/// temporary objects (the session's `pg_temp` schema: `CREATE TEMP TABLE`, its indexes and
/// defaults, `TRUNCATE` and `DROP` of one) are allowed; so are statistics (`ANALYZE`) and large
/// objects, which are data. Which rows the transaction wrote is read from their `xmin`, and
/// which objects it dropped from the exclusive locks it holds on objects that are gone: a
/// temporary object is known by the guard's earlier checks, so one made and dropped by a single
/// call (one multi-statement string, one `DO` block) is refused; `ON COMMIT DROP` is the way.
/// `TRUNCATE` and `REFRESH MATERIALIZED VIEW` of a permanent table rewrite its catalog row and are
/// refused too. The catalogs are checked after every statement whose tag is not plain data work
/// (`SELECT`, `INSERT`, `UPDATE`, `DELETE`, `COPY`, `FETCH`, cursors, savepoints, `SET`, …),
/// naming that statement, and once more when the body returns, for DDL run by a function a
/// `SELECT` called.
final class StatementGuard {
    /// Whether schema changes are refused: in a batch of a resumable migration.
    let refusesSchemaChanges: Bool
    /// The error that stopped the body, once a statement ended the transaction or changed the schema.
    private(set) var failure: PostgreSQLError?
    /// Whether the statements since the last check included one that may have changed the
    /// schema; set by ``noteResult(_:sql:)``.
    private var mayHaveChangedSchema = false
    /// Whether a statement's tag showed that it ended the transaction.
    private var endingStatement: Bool = false
    /// The session's catalog writes when the body started, which the later reads are compared with.
    let catalogWritesBefore: [String: CatalogWrites]

    /// A guard for a body about to run on `connection`: one that refuses schema changes reads
    /// the session's catalog writes first.
    init(refusesSchemaChanges: Bool, on connection: PostgreSQLConnection) throws {
        self.refusesSchemaChanges = refusesSchemaChanges
        catalogWritesBefore = refusesSchemaChanges ? try connection.catalogWrites() : [:]
    }

    /// Throws the guard's error if a statement already ended the transaction or changed the schema.
    @inline(__always)
    func checkOpen() throws {
        if let failure { throw failure }
    }

    /// Reads the command tag of a successful result: called by the connection for every result
    /// of the body's statements, before it is cleared. Tags of data work are recognised by their
    /// first bytes, without making a `String`: a row transform runs one `UPDATE` a row.
    @inline(__always)
    func noteResult(_ result: OpaquePointer, sql: String?) {
        guard let tag = PQcmdStatus(result) else { return }
        if Self.isDataWork(tag) {
            // `CREATE TABLE … AS` and `SELECT … INTO` report the rows they wrote: `SELECT 42`.
            if refusesSchemaChanges, tag.pointee == UInt8(ascii: "S").asCChar, let sql, Self.startsWithCreate(sql) {
                mayHaveChangedSchema = true
            }
            return
        }
        classify(String(cString: tag))
    }

    /// Checks what the statements of one call (`sql`) did, once their results are read: throws
    /// when they ended the transaction or, in a batch, changed the schema.
    func statementsDone(_ sql: String, on connection: PostgreSQLConnection) throws {
        if endingStatement || connection.transactionStatus == PQTRANS_IDLE {
            throw fail(connection.transactionEnded(sql: sql))
        }
        guard mayHaveChangedSchema else { return }
        mayHaveChangedSchema = false
        if let change = try connection.schemaChange(since: catalogWritesBefore) {
            throw fail(connection.schemaChangeInBatch("the statement \(change)", sql: sql))
        }
    }

    /// The last check, when the body has returned and left its transaction open: DDL that a
    /// function called by a `SELECT` ran leaves no tag to notice it by.
    func bodyDone(on connection: PostgreSQLConnection) throws {
        guard refusesSchemaChanges, let change = try connection.schemaChange(since: catalogWritesBefore) else { return }
        throw fail(connection.schemaChangeInBatch(
            "a statement of the batch (a function it called, perhaps) \(change)", sql: nil))
    }

    private func fail(_ error: PostgreSQLError) -> PostgreSQLError {
        failure = error
        return error
    }

    @inline(never)
    private func classify(_ tag: String) {
        let command = tag.prefix { !$0.isNumber }.trimmingCharacters(in: .whitespaces)
        if Self.transactionControl.contains(command) {
            endingStatement = true
        } else if refusesSchemaChanges, !Self.otherDataWork.contains(command) {
            mayHaveChangedSchema = true
        }
    }

    /// Tags that end the transaction, or start or prepare another: `ROLLBACK` is not among them
    /// (`ROLLBACK TO SAVEPOINT` has that tag too); the connection falling back to idle tells.
    private static let transactionControl: Set<String> = [
        "BEGIN", "START TRANSACTION", "COMMIT", "PREPARE TRANSACTION", "COMMIT PREPARED", "ROLLBACK PREPARED",
    ]

    /// Tags of statements that leave the schema alone, beside the frequent ones `isDataWork` knows.
    private static let otherDataWork: Set<String> = [
        "", "MERGE", "MOVE", "DECLARE CURSOR", "CLOSE CURSOR", "CLOSE CURSOR ALL", "SAVEPOINT", "RELEASE", "ROLLBACK",
        "SET", "RESET", "SHOW", "PREPARE", "DEALLOCATE", "DEALLOCATE ALL", "LOCK TABLE", "LISTEN", "UNLISTEN", "NOTIFY",
        "EXPLAIN", "SET CONSTRAINTS", "DISCARD ALL", "DISCARD PLANS", "DISCARD SEQUENCES", "DISCARD TEMP",
    ]

    /// Whether `tag` is `SELECT n`, `INSERT 0 n`, `UPDATE n`, `DELETE n`, `FETCH n` or `COPY n`.
    @inline(__always)
    private static func isDataWork(_ tag: UnsafePointer<CChar>) -> Bool {
        func starts(with word: StaticString) -> Bool {
            strncmp(tag, UnsafeRawPointer(word.utf8Start).assumingMemoryBound(to: CChar.self), word.utf8CodeUnitCount) == 0
        }
        switch UInt8(bitPattern: tag.pointee) {
        case UInt8(ascii: "S"): return starts(with: "SELECT ")
        case UInt8(ascii: "I"): return starts(with: "INSERT ")
        case UInt8(ascii: "U"): return starts(with: "UPDATE ")
        case UInt8(ascii: "D"): return starts(with: "DELETE ")
        case UInt8(ascii: "F"): return starts(with: "FETCH ")
        case UInt8(ascii: "C"): return starts(with: "COPY ")
        default: return false
        }
    }

    /// Whether the first word of `sql`, after blanks and comments, is `CREATE`.
    private static func startsWithCreate(_ sql: String) -> Bool {
        var rest = Substring(sql)
        while true {
            rest = rest.drop { $0.isWhitespace }
            if rest.hasPrefix("--") {
                rest = rest.drop { $0 != "\n" }
            } else if rest.hasPrefix("/*"), let end = rest.range(of: "*/") {
                rest = rest[end.upperBound...]
            } else {
                break
            }
        }
        return rest.prefix(6).uppercased() == "CREATE" && (rest.dropFirst(6).first.map { !$0.isLetter && $0 != "_" } ?? true)
    }
}

extension PostgreSQLConnection {
    /// Runs one call's statements under the guard, if one is armed: refused at once after an
    /// earlier failure, checked once their results are read.
    @inline(__always)
    func guarded<R>(_ sql: String, _ run: () throws -> R) throws -> R {
        guard let statementGuard else { return try run() }
        try statementGuard.checkOpen()
        let result = try run()
        try statementGuard.statementsDone(sql, on: self)
        return result
    }

    /// The error for a body that ended its step's transaction.
    func transactionEnded(sql: String?) -> PostgreSQLError {
        misuse(
            "the migration body ended the step's transaction (COMMIT or ROLLBACK); what it committed stays, nothing was recorded",
            sql: sql)
    }

    func schemaChangeInBatch(_ message: String, sql: String?) -> PostgreSQLError {
        PostgreSQLError(kind: .schemaChangeInBatch, message: message, sql: sql, store: store)
    }

    /// What the current transaction did to the schema since the session's catalog writes were
    /// `before`, for an error (`changed relation item`, `changed the system catalog
    /// pg_description`, `dropped the relation with OID 16390`), or `nil` when it changed no
    /// schema object but temporary ones. Costs one short query when the transaction wrote no
    /// catalog, two otherwise. Runs with the guard set aside: these are the store's queries, not
    /// the body's.
    func schemaChange(since before: [String: CatalogWrites]) throws -> String? {
        let armed = statementGuard
        statementGuard = nil
        defer { statementGuard = armed }
        var written: [String: Bool] = [:]
        for (catalog, counts) in try catalogWrites() {
            let before = before[catalog] ?? CatalogWrites(inserted: 0, updated: 0, deleted: 0)
            if counts.inserted > before.inserted || counts.updated > before.updated || counts.deleted > before.deleted {
                written[catalog] = counts.deleted > before.deleted
            }
        }
        if written.isEmpty { return nil }
        let others = written.keys.filter { !SchemaChanges.accompanying.contains($0) && SchemaChanges.rows(in: $0) == nil }
        if let other = others.min() { return "changed the system catalog \(other)" }
        // In a fixed order, so that the object named is the one a reader expects: the relation
        // rather than one of its columns.
        let detailed = SchemaChanges.temporaryCapable.filter { written[$0.catalog] != nil }.map(\.rows)
        let dropped = written.values.contains(true)
        // One round trip: the session's temporary objects, so that a later `DROP` of one of
        // them is known to drop a temporary object; the rows of other objects the transaction
        // wrote; the objects it dropped (it holds their lock, and they are gone).
        var statements = [SchemaChanges.temporaryObjects]
        if !detailed.isEmpty {
            statements.append(SchemaChanges.prelude + detailed.joined(separator: "\nUNION ALL ") + "\nLIMIT 1")
        }
        if dropped { statements.append(SchemaChanges.droppedObjects) }
        let results = try queryEach(statements.joined(separator: ";\n"))
        let known = temporaryObjects
        for row in results[0] { temporaryObjects.insert(try row[0] as String) }
        if !detailed.isEmpty, let change = results[1].first { return "changed " + (try change[0] as String) }
        if dropped, let last = results.last {
            for row in last {
                let catalog: String = try row[0], object: Int = try row[1]
                if known.contains("\(catalog):\(object)") || temporaryObjects.contains("\(catalog):\(object)") { continue }
                return catalog == "pg_class" ? "dropped the relation with OID \(object)" : "dropped the \(catalog) object with OID \(object)"
            }
        }
        return nil
    }
}

extension PostgreSQLConnection {
    /// How many rows of each system catalog the session inserted, updated and deleted that the
    /// server has not yet added to its cumulative statistics: the current transaction's, and
    /// those of earlier transactions of the session until the server flushes them (at most once
    /// a second, when the session is idle; PostgreSQL 15 and later), which is why the guard
    /// reads them once before the body and compares.
    func catalogWrites() throws -> [String: CatalogWrites] {
        var writes: [String: CatalogWrites] = [:]
        for row in try rows(SchemaChanges.writtenCatalogs) {
            writes[try row[0] as String] = CatalogWrites(inserted: try row[1], updated: try row[2], deleted: try row[3])
        }
        return writes
    }
}

/// Rows of one system catalog written by a session; see `PostgreSQLConnection.catalogWrites()`.
struct CatalogWrites: Equatable {
    var inserted: Int
    var updated: Int
    var deleted: Int
}

/// The catalog queries of `PostgreSQLConnection.schemaChange(since:)`.
private enum SchemaChanges {
    /// The system catalogs the session wrote, with the rows it inserted, updated and deleted.
    /// Statistics and large objects are data.
    static let writtenCatalogs = """
        SELECT relname::text, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_xact_sys_tables
        WHERE schemaname = 'pg_catalog' AND n_tup_ins + n_tup_upd + n_tup_del > 0
          AND relname NOT IN ('pg_statistic', 'pg_statistic_ext_data', 'pg_largeobject', 'pg_largeobject_metadata')
        """

    /// Catalogs written with the objects recorded in others, never alone by a schema change
    /// this guard must see.
    static let accompanying: Set<String> = ["pg_depend", "pg_shdepend"]

    /// For each catalog that temporary objects write: a query of the rows the transaction wrote
    /// there (itself or a subtransaction: a visible row whose creating transaction is at least the
    /// top one and still in progress) that are not a temporary object's, naming the object.
    static let temporaryCapable: [(catalog: String, rows: String)] = {
        let own = """
            xmin::text::int8 >= (SELECT low FROM top) AND txid_status((SELECT epoch FROM top) + xmin::text::int8) = 'in progress'
            """
        let relations = "(SELECT oid FROM temporary_relations)"
        let namespaces = "(SELECT oid FROM temporary_namespaces)"
        let catalogs: [(String, String, String)] = [
            // A TOAST table comes with a change of its table, which is the one to name.
            ("pg_class", "'relation ' || oid::regclass::text", "relpersistence <> 't' AND relnamespace <> 'pg_toast'::regnamespace"),
            ("pg_attribute", "'relation ' || attrelid::regclass::text",
             "attrelid NOT IN \(relations) AND attrelid NOT IN (SELECT oid FROM pg_class WHERE relnamespace = 'pg_toast'::regnamespace)"),
            ("pg_type", "'type ' || oid::regtype::text", "typnamespace NOT IN \(namespaces)"),
            ("pg_namespace", "'schema ' || nspname::text", "oid NOT IN \(namespaces)"),
            ("pg_constraint", "'constraint ' || conname::text", "conrelid NOT IN \(relations) AND connamespace NOT IN \(namespaces)"),
            ("pg_index", "'index ' || indexrelid::regclass::text", "indrelid NOT IN \(relations)"),
            ("pg_attrdef", "'the default of a column of ' || adrelid::regclass::text", "adrelid NOT IN \(relations)"),
            ("pg_sequence", "'sequence ' || seqrelid::regclass::text", "seqrelid NOT IN \(relations)"),
            ("pg_rewrite", "'rule ' || rulename::text", "ev_class NOT IN \(relations)"),
            ("pg_inherits", "'the parents of ' || inhrelid::regclass::text", "inhrelid NOT IN \(relations)"),
            ("pg_trigger", "'trigger ' || tgname::text", "tgrelid NOT IN \(relations)"),
        ]
        return catalogs.map { catalog, object, permanent in
            (catalog, "SELECT \(object) FROM pg_catalog.\(catalog) WHERE \(permanent) AND \(own)")
        }
    }()

    /// The query of `catalog`'s rows in ``temporaryCapable``, if it is one of them.
    static func rows(in catalog: String) -> String? {
        temporaryCapable.first { $0.catalog == catalog }?.rows
    }

    static let prelude = """
        WITH top AS (
            SELECT txid_current_if_assigned() % 4294967296 AS low,
                   txid_current_if_assigned() - txid_current_if_assigned() % 4294967296 AS epoch
        ), temporary_namespaces AS (
            SELECT oid FROM pg_namespace WHERE nspname LIKE 'pg\\_temp\\_%' OR nspname LIKE 'pg\\_toast\\_temp\\_%'
        ), temporary_relations AS (
            SELECT oid FROM pg_class WHERE relpersistence = 't'
        )

        """

    /// The session's temporary objects, as `catalog:oid`: relations (their indexes, TOAST tables
    /// and sequences too), types (their row types), constraints, defaults, triggers and rules,
    /// all of which a `DROP` of a temporary table drops.
    static let temporaryObjects = """
        WITH relations AS (SELECT oid FROM pg_class WHERE relpersistence = 't' AND NOT pg_is_other_temp_schema(relnamespace))
        SELECT 'pg_class:' || oid FROM relations
        UNION ALL SELECT 'pg_type:' || oid FROM pg_type WHERE typnamespace = pg_my_temp_schema()
        UNION ALL SELECT 'pg_constraint:' || oid FROM pg_constraint WHERE conrelid IN (SELECT oid FROM relations)
        UNION ALL SELECT 'pg_attrdef:' || oid FROM pg_attrdef WHERE adrelid IN (SELECT oid FROM relations)
        UNION ALL SELECT 'pg_trigger:' || oid FROM pg_trigger WHERE tgrelid IN (SELECT oid FROM relations)
        UNION ALL SELECT 'pg_rewrite:' || oid FROM pg_rewrite WHERE ev_class IN (SELECT oid FROM relations)
        """

    /// Objects the transaction dropped: it holds an exclusive lock on them, and they are gone.
    static let droppedObjects = """
        SELECT coalesce(l.classid::regclass::text, 'pg_class'), coalesce(l.objid, l.relation)::int8
        FROM pg_locks l
        WHERE l.pid = pg_backend_pid() AND l.mode = 'AccessExclusiveLock' AND (
            l.locktype = 'relation' AND NOT EXISTS (SELECT FROM pg_class WHERE oid = l.relation)
            OR l.locktype = 'object' AND CASE l.classid
                WHEN 'pg_type'::regclass THEN NOT EXISTS (SELECT FROM pg_type WHERE oid = l.objid)
                WHEN 'pg_constraint'::regclass THEN NOT EXISTS (SELECT FROM pg_constraint WHERE oid = l.objid)
                WHEN 'pg_attrdef'::regclass THEN NOT EXISTS (SELECT FROM pg_attrdef WHERE oid = l.objid)
                WHEN 'pg_trigger'::regclass THEN NOT EXISTS (SELECT FROM pg_trigger WHERE oid = l.objid)
                WHEN 'pg_rewrite'::regclass THEN NOT EXISTS (SELECT FROM pg_rewrite WHERE oid = l.objid)
                ELSE false END)
        ORDER BY l.locktype = 'relation' DESC, 2
        """
}

extension UInt8 {
    fileprivate var asCChar: CChar { CChar(bitPattern: self) }
}
