/// A tenant source whose tenants' stores keep a cap on the connections each database sees,
/// apart from the fleet's cap on tenants in flight: the cap a run gives in
/// ``FleetRunOptions/maxConnections``.
///
/// The PostgreSQL sources keep it with a pool per database that its tenants' stores borrow
/// from; a folder of SQLite files keeps any cap by construction, each file a database of its own
/// that its store reaches through one connection. A source that is neither (a ``TenantList``,
/// whose stores the template opens as it likes) cannot keep a cap, and a run given one refuses
/// to start (``FleetError/connectionCapNotKept(source:)``).
package protocol ConnectionCappedTenantSource: TenantSource {
    /// Makes the tenants' stores hold at most `cap` connections to each database from now on,
    /// waiting for one of them when all are in use; returns the cap it replaced, for the run to
    /// put back when it ends, or `nil` when the source keeps every cap without one.
    @discardableResult
    func capConnections(perDatabase cap: Int) -> Int?
}
