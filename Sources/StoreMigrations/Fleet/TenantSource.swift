/// Where a fleet's tenants come from: a list, the SQLite files of a folder, the schemas of a
/// PostgreSQL database. A source streams its tenants, one at a time, so that the memory a fleet
/// takes does not grow with its number of tenants.
///
/// A fleet asks for a new iterator each time it walks the fleet (to count it, to plan it, to
/// run a canary wave and then the rest), so a source must list the same tenants, in the same
/// order, each time it is asked while nothing changes.
///
/// ```swift
/// struct AccountTenants: TenantSource {
///     let database: AccountsDatabase
///     var description: String { "accounts in \(database)" }
///     func makeTenantIterator() throws -> some TenantIterator { database.accountCursor() }
/// }
/// ```
public protocol TenantSource: Sendable, CustomStringConvertible {
    /// The iterator a walk over the tenants uses.
    associatedtype Iterator: TenantIterator
    /// Starts a walk over the tenants, from the first.
    ///
    /// - Throws: An error naming the source when it cannot be read (a missing folder, say).
    func makeTenantIterator() throws -> Iterator
}

/// A walk over a ``TenantSource``'s tenants.
public protocol TenantIterator {
    /// The next tenant, or `nil` after the last.
    ///
    /// - Throws: An error naming the source when reading it failed part way.
    mutating func next() throws -> Tenant?
}
