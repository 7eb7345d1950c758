import Foundation
import StoreMigrations

/// The connections the tenant stores of one database share, at most ``limit`` of them open at
/// once whatever the number of tenants in flight; and the records a tenant source read ahead
/// for them, many schemas in one query.
///
/// A store borrows a connection for each call and gives it back after; a connection last used
/// for another schema gets that schema's `search_path` first (and forgets that the store tables
/// exist, which it knew of the other schema).
final class PostgreSQLConnectionPool: SharedConnections, @unchecked Sendable {
    // @unchecked: `storedLimit`, `idle`, `out`, `readAhead`, `newestPage` and `preparedFor` are only touched
    // with `condition` held; the connections in `idle` are used by no thread while they are there.
    private let condition = NSCondition()
    private var storedLimit: Int
    private var idle: [(connection: PostgreSQLConnection, schema: String)] = []
    private var out = 0
    /// Records read ahead by schema, with the number of the page that read them: the pages
    /// before the last two are let go of, so that schemas passed over (another worker's, a
    /// canary wave's filter) take no memory for the rest of the walk.
    private var readAhead: [String: (page: Int, records: [String: MigrationRecord])] = [:]
    private var newestPage = 0
    /// The schema each connection out is prepared for, to keep with it when it comes back.
    private var preparedFor: [ObjectIdentifier: String] = [:]

    init(limit: Int) {
        storedLimit = max(1, limit)
    }

    /// At most how many connections are open at once. Lowered, idle connections past it are
    /// closed at once, and those out when they come back, before any other is taken.
    var limit: Int {
        get { condition.withLock { storedLimit } }
        set {
            let closing: [PostgreSQLConnection] = condition.withLock {
                storedLimit = max(1, newValue)
                let surplus = min(idle.count, max(0, out + idle.count - storedLimit))
                let closing = idle.prefix(surplus).map(\.connection)
                idle.removeFirst(surplus)
                condition.broadcast()
                return closing
            }
            // Closed here, outside the lock: a connection closes when its last reference goes.
            withExtendedLifetime(closing) {}
        }
    }

    func take(schema: String, opening open: () throws -> PostgreSQLConnection) throws -> PostgreSQLConnection {
        let reused: (connection: PostgreSQLConnection, schema: String)? = condition.withLock {
            // Idle connections count within the limit: one is taken whenever there is room.
            while out >= storedLimit { condition.wait() }
            out += 1
            guard !idle.isEmpty else { return nil }
            return idle.remove(at: idle.lastIndex { $0.schema == schema } ?? idle.count - 1)
        }
        do {
            guard let reused, !reused.connection.isBroken else { return try prepared(open(), schema: schema, from: nil) }
            return try prepared(reused.connection, schema: schema, from: reused.schema)
        } catch {
            condition.withLock {
                out -= 1
                condition.signal()
            }
            throw error
        }
    }

    private func prepared(_ connection: PostgreSQLConnection, schema: String, from previous: String?) throws -> PostgreSQLConnection {
        if previous != schema {
            let path = PostgreSQLConnection.quoted(schema) + (schema == "public" ? "" : ", public")
            try connection.execute("SET search_path TO \(path)")
            connection.storeTablesExist = false
        }
        condition.withLock { preparedFor[ObjectIdentifier(connection)] = schema }
        return connection
    }

    func giveBack(_ connection: PostgreSQLConnection, reusable: Bool) {
        condition.withLock {
            out -= 1
            let schema = preparedFor.removeValue(forKey: ObjectIdentifier(connection))
            // One past a lowered limit is closed rather than kept.
            if reusable, let schema, out + idle.count < storedLimit { idle.append((connection, schema)) }
            condition.signal()
        }
    }

    func takeRecordsReadAhead(schema: String) -> [String: MigrationRecord]? {
        condition.withLock { readAhead.removeValue(forKey: schema)?.records }
    }

    /// Keeps the records of a page of schemas for their stores' first reads, letting go of those
    /// of pages before the previous one.
    func readAhead(_ records: [String: [String: MigrationRecord]]) {
        condition.withLock {
            newestPage += 1
            let page = newestPage
            readAhead = readAhead.filter { $0.value.page >= page - 1 }
            for (schema, record) in records { readAhead[schema] = (page, record) }
        }
    }

    /// How many connections are open, out and idle.
    var openConnections: Int { condition.withLock { out + idle.count } }
}
