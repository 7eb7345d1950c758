import StoreMigrations

/// Connections a store borrows for each call instead of keeping one of its own: the pool a
/// fleet's tenants share per database. A store that borrows sets no state of its own on the
/// connection between calls; the lender sets the session's `search_path` to the store's schema.
protocol SharedConnections: AnyObject, Sendable {
    /// A connection for `schema`, opened by `open` when none is idle; waits while every
    /// connection the lender allows is out.
    func take(schema: String, opening open: () throws -> PostgreSQLConnection) throws -> PostgreSQLConnection
    /// Gives back a connection `take` returned; `reusable` is false for one that broke or was
    /// left in a transaction, which is closed.
    func giveBack(_ connection: PostgreSQLConnection, reusable: Bool)
    /// The records of `schema`, read ahead with many other schemas' in one query, taken once:
    /// `nil` when none were read ahead, and the store reads them itself.
    func takeRecordsReadAhead(schema: String) -> [String: MigrationRecord]?
}
