import Foundation
import Testing
import StoreMigrations
import TestSupport

/// A fleet's walk threads each keep one ``WorkerResources`` for all the tenants they run: the
/// stores that can (``ReadReusingStore``) read their records with it, in the fleet's plan and in
/// both plans of a fleet run, and it is emptied before the walk returns. Outside a fleet, stores
/// read as they always do.
@Suite struct FleetWorkerResourcesTests {
    /// What the stores of a test did with the resources they were given.
    final class Tally: @unchecked Sendable {
        // @unchecked: the counts are only touched with `lock` held.
        private let lock = NSLock()
        private var counts: [String: Int] = [:]

        func count(_ name: String) {
            lock.withLock { counts[name, default: 0] += 1 }
        }

        subscript(_ name: String) -> Int {
            lock.withLock { counts[name, default: 0] }
        }
    }

    /// What a store keeps in a thread's resources: counts its making and its release.
    final class Kept: Sendable {
        let tally: Tally

        init(tally: Tally) {
            self.tally = tally
            tally.count("made")
        }

        deinit { tally.count("released") }
    }

    /// An in-memory store that reads through a thread's resources when given them.
    final class ReusingStore: ReadReusingStore {
        typealias Content = [String]
        let base: InMemoryStore<[String]>
        let tally: Tally

        init(_ base: InMemoryStore<[String]>, tally: Tally) {
            self.base = base
            self.tally = tally
        }

        var description: String { base.description }

        func readRecords() throws -> [String: MigrationRecord] {
            tally.count("plain reads")
            return try base.readRecords()
        }

        func readRecords(reusing resources: WorkerResources) throws -> [String: MigrationRecord] {
            _ = resources.resource { Kept(tally: tally) }
            tally.count("reused reads")
            return try base.readRecords()
        }

        func transaction<T>(
            _ request: TransactionRequest, _ body: (inout [String: MigrationRecord], inout [String]) throws -> T
        ) throws -> T {
            try base.transaction(request, body)
        }
    }

    let tally = Tally()
    let stores = (0..<8).map { InMemoryStore<[String]>([], name: "store \($0)") }

    func fleet() -> MigrationFleet {
        MigrationFleet(appVersion: "2.0", tenants: TenantList(keys: stores.indices.map { "\($0)" })) { [stores, tally] tenant, coordinator in
            let orders = try coordinator.manager("orders", store: ReusingStore(stores[Int(tenant.key)!], tally: tally))
            orders.register("2.0") { applied in applied.append("orders@2.0") }
        }
    }

    @Test func oneThreadKeepsOneObjectForAllItsTenantsAndLetsGoOfItBeforeThePlanReturns() throws {
        let plan = try fleet().plan(maxTenantsInFlight: 1)
        #expect(plan.pending.map(\.description) == ["8 tenants: orders@2.0 (0, 1, 2, 3, 4 and 3 more)"])
        #expect(tally["reused reads"] == 8)
        #expect(tally["plain reads"] == 0)
        #expect(tally["made"] == 1)
        #expect(tally["released"] == 1)
    }

    @Test func aRunReadsThroughTheThreadsResourcesAndLetsGoOfThemAll() throws {
        let report = try fleet().migrate(FleetRunOptions(maxTenantsInFlight: 2))
        #expect(report.migrated == 8)
        #expect(stores.allSatisfy { $0.contents == ["orders@2.0"] })
        // The check's plan and the run's, for each tenant; the step itself uses the store's transaction.
        #expect(tally["reused reads"] == 16)
        #expect(tally["plain reads"] == 0)
        #expect((1...2).contains(tally["made"]))
        #expect(tally["released"] == tally["made"])
    }

    @Test func aCoordinatorOutsideAFleetReadsAsEver() throws {
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        try coordinator.manager("orders", store: ReusingStore(stores[0], tally: tally)).register("2.0") { _ in }
        #expect(try !coordinator.plan().isUpToDate)
        #expect(tally["plain reads"] == 1)
        #expect(tally["reused reads"] == 0)
        #expect(tally["made"] == 0)
    }
}
