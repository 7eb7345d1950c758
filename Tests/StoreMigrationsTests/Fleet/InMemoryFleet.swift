import Foundation
import StoreMigrations
import TestSupport

/// A fleet of tenants whose one manager, `orders`, keeps its migrations' names in an in-memory
/// store of the tenant's own, kept across the coordinators the fleet makes. A tenant listed in
/// `failing` throws in `orders@2.1`.
final class InMemoryFleet: @unchecked Sendable {
    let keys: [String]
    let stores: [String: InMemoryStore<[String]>]
    /// Every body that ran, `tenant: orders@version`, in order.
    let log = EventLog()
    /// Every event of the last run, as `describe(_:)` writes it.
    let events = EventLog()
    let failing: Locked<Set<String>>

    init(_ keys: [String], failing: Set<String> = []) {
        self.keys = keys
        stores = Dictionary(uniqueKeysWithValues: keys.map { ($0, InMemoryStore<[String]>([], name: "store \($0)")) })
        self.failing = Locked(failing)
    }

    func fleet(tenants: (any TenantSource)? = nil, groups: [String: String] = [:]) -> MigrationFleet {
        let source = tenants ?? TenantList(keys.map { Tenant($0, group: groups[$0]) })
        return MigrationFleet(appVersion: "2.1", tenants: source) { [stores, log, failing] tenant, coordinator in
            let orders = try coordinator.manager("orders", store: stores[tenant.key]!)
            for version: Version in ["2.0", "2.1"] {
                orders.register(version) { applied in
                    if version == "2.1", failing.value.contains(tenant.key) { throw TestFailure(message: "boom in \(tenant.key)") }
                    applied.append("orders@\(version)")
                    log.append("\(tenant.key): orders@\(version)")
                }
            }
        }
    }

    /// Migrates the fleet, keeping its events in ``events``.
    func migrate(_ options: FleetRunOptions, tenants: (any TenantSource)? = nil, groups: [String: String] = [:]) throws -> FleetReport {
        let events = events
        return try fleet(tenants: tenants, groups: groups).migrate(options) { events.append(describe($0)) }
    }

    func contents(_ key: String) -> [String] { stores[key]!.contents }
}

/// One line per fleet event: `b: failed: boom in b`, `e: skipped failureBudgetExceeded`.
func describe(_ event: FleetEvent) -> String {
    switch event {
    case .started(let tenant, _): return "\(tenant.key): started"
    case .finished(let tenant, _, _): return "\(tenant.key): finished"
    case let .failed(tenant, error, _):
        let cause = (error as? MigrationRunError)?.underlyingError ?? error
        return "\(tenant.key): failed: \(cause)"
    case let .skipped(tenant, reason, _): return "\(tenant.key): skipped \(reason.rawValue)"
    }
}

/// A value changed from several threads, each change under one lock.
final class Shared<Value>: @unchecked Sendable {
    // @unchecked: `stored` is only touched with `lock` held.
    private let lock = NSLock()
    private var stored: Value

    init(_ value: Value) { stored = value }

    var value: Value { lock.withLock { stored } }

    /// Changes the value and returns what `change` returns, under the lock.
    @discardableResult
    func update<T>(_ change: (inout Value) -> T) -> T { lock.withLock { change(&stored) } }
}
