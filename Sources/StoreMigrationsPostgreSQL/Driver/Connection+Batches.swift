import CLibPQ
import Foundation
import StoreMigrations

extension PostgreSQLConnection {
    /// Rewrites rows of a table in Swift, batch by batch, in constant memory: for changes SQL
    /// cannot express, such as generating identifiers or re-encoding data.
    ///
    /// ```swift
    /// try db.execute("ALTER TABLE event ADD COLUMN guid uuid")
    /// try db.transformRows(in: "event", key: "id", columns: ["guid"], where: "guid IS NULL") { _ in
    ///     ["guid": .text(UUID().uuidString)]
    /// }
    /// ```
    ///
    /// Rows are read `batchSize` at a time in key order, each batch starting after the last key
    /// of the previous one (keyset pagination: every batch costs the same however far into the
    /// table it is), and each changed row is written back by one prepared `UPDATE`. After each
    /// batch the step's progress is reported and cancellation checked (a cancelled run throws
    /// `CancellationError`, which rolls the step back).
    ///
    /// - Parameters:
    ///   - table: The table, schema-qualified if need be (quoted as given: `"public.event"` is
    ///     not split; pass `schema:` for that).
    ///   - schema: The table's schema, or `nil` for the search path.
    ///   - key: A unique, non-null column ordering the rows (the primary key); read, never written.
    ///   - columns: The columns `transform` reads and may write.
    ///   - condition: An SQL condition selecting the rows, or `nil` for all.
    ///   - batchSize: How many rows are held in memory at once.
    ///   - transform: The new values of some of `columns`, by name; `nil` leaves the row as it is.
    /// - Returns: The number of rows written.
    @discardableResult
    public func transformRows(
        in table: String, schema: String? = nil, key: String = "id", columns: [String], where condition: String? = nil,
        batchSize: Int = 1_000, _ transform: (PostgreSQLRow) throws -> [String: PostgreSQLValue]?
    ) throws -> Int {
        guard batchSize > 0 else { throw misuse("batchSize must be positive, not \(batchSize)") }
        let transformer = try KeysetRowTransform(
            self, table: table, schema: schema, key: key, columns: columns, condition: condition, limit: batchSize,
            locking: false, pages: .many)
        let total = try transformer.count()
        var lastKey: PostgreSQLValue?
        var visited = 0, changed = 0
        while true {
            try context?.checkCancellation()
            let page = try transformer.run(after: lastKey, transform)
            visited += page.visited
            changed += page.changed
            context?.reportProgress(completed: visited, of: max(total, visited))
            guard page.visited == batchSize, let last = page.lastKey else { break }
            lastKey = last
        }
        return changed
    }

    /// One batch of a resumable row transform: rewrites at most `batch.limit` rows after
    /// `batch.cursor` (the key of the last row the previous batch visited) as
    /// ``transformRows(in:schema:key:columns:where:batchSize:_:)`` does, and says where the next
    /// batch starts. The body of
    /// ``StoreMigrations/MigrationManager/registerResumable(_:dependsOn:transformingRowsOf:key:columns:where:batchSize:deferred:options:_:)``;
    /// call it from ``/StoreMigrations/MigrationManager/registerResumable(_:dependsOn:batchSize:deferred:options:_:)``
    /// to do more in the batch's transaction.
    ///
    /// ```swift
    /// orders.registerResumable("2.1", deferred: true) { db, batch in
    ///     try db.transformRows(
    ///         in: "event", columns: ["payload"], where: "guid IS NULL", batch: batch
    ///     ) { row in
    ///         ["guid": .text(UUID().uuidString)]
    ///     }
    /// }
    /// ```
    ///
    /// The batch's rows are locked (`FOR NO KEY UPDATE`) from when they are read until the batch
    /// commits: a deferred transform runs while the service writes to the same table, and an
    /// update the service commits between the read and the write would otherwise be overwritten
    /// with values computed from the row before it.
    ///
    /// The cursor is the last key as JSON, `[500]` for an integer key and its text form as a
    /// string (`["2024-05-01 10:00:00+00"]`) for any other type, which the server reads back as
    /// the same value. The rows the condition selects are counted by the first batch, for progress.
    ///
    /// - Parameters:
    ///   - table: The table, quoted as given.
    ///   - schema: The table's schema, or `nil` for the search path.
    ///   - key: A unique, non-null column ordering the rows, read but never written; `nil` for
    ///     the table's primary key, which must then be one column.
    ///   - columns: The columns `transform` reads and may write.
    ///   - condition: An SQL condition selecting the rows, or `nil` for all.
    ///   - batch: What the coordinator asks of this batch.
    ///   - transform: The new values of some of `columns`, by name; `nil` leaves the row as it is.
    public func transformRows(
        in table: String, schema: String? = nil, key: String? = nil, columns: [String], where condition: String? = nil,
        batch: BatchRequest, _ transform: (PostgreSQLRow) throws -> [String: PostgreSQLValue]?
    ) throws -> BatchResult {
        let limit = max(1, batch.limit)
        let transformer = try KeysetRowTransform(
            self, table: table, schema: schema, key: key, columns: columns, condition: condition, limit: limit,
            locking: true, pages: .one)
        let after = try batch.cursor.map { try transformer.key(fromCursor: $0) }
        // Counted once, by the first batch; the later ones keep what it recorded.
        let total = try batch.total ?? transformer.count()
        let page = try transformer.run(after: after, transform)
        guard page.visited == limit, let last = page.lastKey else { return .finished(processed: page.visited) }
        return .more(cursor: try transformer.cursor(after: last), processed: page.visited, total: total)
    }

    /// Calls `body` with each row of a query, fetched `batchSize` rows at a time through a
    /// server-side cursor, so that a query of any size runs in constant memory.
    ///
    /// ```swift
    /// var total = 0
    /// try db.forEachRow("SELECT amount_cents FROM payment WHERE year = $1", [2024]) { row in
    ///     total += try row[0] as Int
    /// }
    /// ```
    ///
    /// The cursor lives in the step's transaction; outside a transaction (a non-transactional
    /// step) one is opened for the length of the call and committed after it. Progress is not
    /// reported (the size is unknown), cancellation is checked before every batch.
    public func forEachRow(
        _ sql: String, _ parameters: [PostgreSQLValue] = [], batchSize: Int = 1_000, _ body: (PostgreSQLRow) throws -> Void
    ) throws {
        guard batchSize > 0 else { throw misuse("batchSize must be positive, not \(batchSize)") }
        let ownsTransaction = transactionStatus == PQTRANS_IDLE
        if ownsTransaction { try execute("BEGIN") }
        do {
            let cursor = makeCursorName()
            try execute("DECLARE \(cursor) NO SCROLL CURSOR FOR \(sql)", arguments: parameters)
            let fetch = "FETCH FORWARD \(batchSize) FROM \(cursor)"
            while true {
                try context?.checkCancellation()
                let batch = try rows(fetch)
                for row in batch { try body(row) }
                if batch.count < batchSize { break }
            }
            try execute("CLOSE \(cursor)")
            if ownsTransaction { try execute("COMMIT") }
        } catch {
            if ownsTransaction, transactionStatus != PQTRANS_IDLE { PQclear(PQexec(handle, "ROLLBACK")) }
            throw error
        }
    }
}

/// The statements of a row transform over one table, prepared once a call, and one page of it.
private struct KeysetRowTransform {
    let connection: PostgreSQLConnection
    let table: String
    let qualified: String
    let key: String
    let written: [String]
    let condition: String?
    let first: String
    let following: String
    /// `following`, prepared when the call reads many pages.
    let next: PostgreSQLStatement?
    let update: PostgreSQLStatement?

    /// How many pages a call reads: a batch of a resumable transform reads one, and sends its
    /// query unprepared, in one round trip rather than two.
    enum Pages { case one, many }

    init(
        _ connection: PostgreSQLConnection, table: String, schema: String?, key: String?, columns: [String],
        condition: String?, limit: Int, locking: Bool, pages: Pages
    ) throws {
        let qualified = (schema.map { PostgreSQLConnection.quoted($0) + "." } ?? "") + PostgreSQLConnection.quoted(table)
        let key = try key ?? Self.primaryKey(of: qualified, named: table, on: connection)
        let written = columns.filter { $0 != key }
        let selection = ([key] + written).map(PostgreSQLConnection.quoted).joined(separator: ", ")
        let filter = condition.map { " AND (\($0))" } ?? ""
        let quotedKey = PostgreSQLConnection.quoted(key)
        let lock = locking ? " FOR NO KEY UPDATE" : ""
        self.connection = connection
        self.table = table
        self.qualified = qualified
        self.key = key
        self.written = written
        self.condition = condition
        // The limit is written into the statements: as a parameter, a generic plan would be made
        // for an unknown limit, and could sort the whole table rather than walk the key's index.
        first = "SELECT \(selection) FROM \(qualified) WHERE true\(filter) ORDER BY \(quotedKey) LIMIT \(limit)\(lock)"
        following = "SELECT \(selection) FROM \(qualified) WHERE \(quotedKey) > $1\(filter) ORDER BY \(quotedKey) LIMIT \(limit)\(lock)"
        next = pages == .many ? try connection.prepare(following) : nil
        update = written.isEmpty ? nil : try connection.prepare(
            "UPDATE \(qualified) SET "
                + written.enumerated().map { "\(PostgreSQLConnection.quoted($1)) = $\($0 + 1)" }.joined(separator: ", ")
                + " WHERE \(quotedKey) = $\(written.count + 1)")
    }

    /// The rows the condition selects.
    func count() throws -> Int {
        let filter = condition.map { " AND (\($0))" } ?? ""
        return try connection.scalar("SELECT count(*) FROM \(qualified) WHERE true\(filter)", as: Int.self) ?? 0
    }

    /// Transforms the next page of rows after `lastKey` (from the start when `nil`).
    func run(
        after lastKey: PostgreSQLValue?, _ transform: (PostgreSQLRow) throws -> [String: PostgreSQLValue]?
    ) throws -> (visited: Int, changed: Int, lastKey: PostgreSQLValue?) {
        let batch: [PostgreSQLRow]
        if let lastKey {
            batch = try next?.rows(arguments: [lastKey]) ?? connection.rows(following, arguments: [lastKey])
        } else {
            batch = try connection.rows(first)
        }
        var changed = 0
        // The update's parameters, one array reused for every row: the written columns as read,
        // each replaced by the value the transform returns for it, then the key.
        var parameters: [PostgreSQLValue] = []
        parameters.reserveCapacity(written.count + 1)
        for row in batch {
            guard let values = try transform(row), !values.isEmpty else { continue }
            parameters.removeAll(keepingCapacity: true)
            parameters.append(contentsOf: row.values.dropFirst())
            for (column, value) in values {
                // A linear search: a transform writes a few columns, and comparing a few short
                // strings costs less than hashing them.
                guard let index = written.firstIndex(of: column) else {
                    throw PostgreSQLError(
                        kind: .unlistedColumn(table: table, column: column),
                        message: "it is not among the columns it may write (" + written.joined(separator: ", ") + ")",
                        store: connection.store)
                }
                parameters[index] = value
            }
            parameters.append(row.values[0])
            // `update` exists whenever there is a column to write, and so whenever the loop
            // above accepted the transform's values.
            try update?.execute(arguments: parameters)
            changed += 1
        }
        return (batch.count, changed, batch.last?.values[0])
    }

    /// The cursor after `key`: `[n]` for an integer, `["text"]` with the server's text form of
    /// any other value, which the server parses back to the same value as the key's type.
    func cursor(after key: PostgreSQLValue) throws -> String {
        let data: Data
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        switch key {
        case .integer(let number): data = try encoder.encode([number])
        case .null: throw connection.misuse("transformRows on \(table) met a NULL in its key column \(self.key)")
        default: data = try encoder.encode([key.textFormat ?? ""])
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// The key a ``cursor(after:)`` stands for.
    func key(fromCursor cursor: String) throws -> PostgreSQLValue {
        let data = Data(cursor.utf8)
        if let numbers = try? JSONDecoder().decode([Int64].self, from: data), numbers.count == 1 { return .integer(numbers[0]) }
        if let texts = try? JSONDecoder().decode([String].self, from: data), texts.count == 1 { return .text(texts[0]) }
        throw connection.misuse("the recorded cursor \(cursor) of the row transform on \(table) is not a key")
    }

    /// The one column of `table`'s primary key.
    private static func primaryKey(of qualified: String, named table: String, on connection: PostgreSQLConnection) throws -> String {
        guard try connection.scalar("SELECT to_regclass($1) IS NOT NULL", arguments: [.text(qualified)], as: Bool.self) == true else {
            throw connection.misuse("transformRows found no table \(qualified)")
        }
        let columns = try connection.rows(
            """
            SELECT a.attname::text FROM pg_index i
            JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
            WHERE i.indrelid = to_regclass($1) AND i.indisprimary ORDER BY array_position(i.indkey::int2[], a.attnum)
            """, arguments: [.text(qualified)]
        ).map { try $0[0] as String }
        guard columns.count == 1 else {
            throw connection.misuse(
                columns.isEmpty
                    ? "transformRows on \(table) needs a key: the table has no primary key; pass key: with a unique, non-null column"
                    : "transformRows on \(table) needs a key of one column, and its primary key has \(columns.count) ("
                        + columns.joined(separator: ", ") + "); pass key: with a unique, non-null column")
        }
        return columns[0]
    }
}
