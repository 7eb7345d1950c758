import CLibPQ
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
        let qualified = (schema.map { Self.quoted($0) + "." } ?? "") + Self.quoted(table)
        let written = columns.filter { $0 != key }
        let selection = ([key] + written).map(Self.quoted).joined(separator: ", ")
        let filter = condition.map { " AND (\($0))" } ?? ""
        let quotedKey = Self.quoted(key)
        let total = try scalar("SELECT count(*) FROM \(qualified) WHERE true\(filter)", as: Int.self) ?? 0
        let first = try prepare(
            "SELECT \(selection) FROM \(qualified) WHERE true\(filter) ORDER BY \(quotedKey) LIMIT \(batchSize)")
        let next = try prepare(
            "SELECT \(selection) FROM \(qualified) WHERE \(quotedKey) > $1\(filter) ORDER BY \(quotedKey) LIMIT \(batchSize)")
        let update = written.isEmpty ? nil : try prepare(
            "UPDATE \(qualified) SET "
                + written.enumerated().map { "\(Self.quoted($1)) = $\($0 + 1)" }.joined(separator: ", ")
                + " WHERE \(quotedKey) = $\(written.count + 1)")
        var lastKey: PostgreSQLValue?
        var visited = 0, changed = 0
        // The update's parameters, one array reused for every row: the written columns as read,
        // each replaced by the value the transform returns for it, then the key.
        var parameters: [PostgreSQLValue] = []
        parameters.reserveCapacity(written.count + 1)
        while true {
            try context?.checkCancellation()
            let batch = try lastKey.map { try next.query([$0]) } ?? first.query()
            for row in batch {
                guard let values = try transform(row), !values.isEmpty else { continue }
                parameters.removeAll(keepingCapacity: true)
                parameters.append(contentsOf: row.values.dropFirst())
                for (column, value) in values {
                    // A linear search: a transform writes a few columns, and comparing a few
                    // short strings costs less than hashing them.
                    guard let index = written.firstIndex(of: column) else {
                        throw misuse(
                            "transformRows on \(table) returned column \(column), which is not among the columns it may write ("
                                + written.joined(separator: ", ") + ")")
                    }
                    parameters[index] = value
                }
                parameters.append(row.values[0])
                // `update` exists whenever there is a column to write, and so whenever the loop
                // above accepted the transform's values.
                try update?.execute(parameters)
                changed += 1
            }
            visited += batch.count
            context?.reportProgress(completed: visited, of: max(total, visited))
            guard batch.count == batchSize, let last = batch.last else { break }
            lastKey = last.values[0]
        }
        return changed
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
            try execute("DECLARE \(cursor) NO SCROLL CURSOR FOR \(sql)", parameters)
            let fetch = "FETCH FORWARD \(batchSize) FROM \(cursor)"
            while true {
                try context?.checkCancellation()
                let batch = try query(fetch)
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
