import Foundation
import Testing
import StoreMigrations
import TestSupport

/// Fleet runs where something other than a step fails: a template, the source part way, a source
/// that cannot be read at all; and the run from asynchronous code.
@Suite struct FleetRunEdgeTests {
    @Test func aTemplateThatThrowsFailsItsTenantBeforeItStarts() throws {
        let fleet = InMemoryFleet(["a", "b"])
        let events = EventLog()
        let report = try MigrationFleet(appVersion: "2.1", tenants: TenantList(keys: ["a", "x", "b"])) { tenant, coordinator in
            guard tenant.key != "x" else { throw TestFailure(message: "no stores for x") }
            let orders = try coordinator.manager("orders", store: fleet.stores[tenant.key]!)
            orders.register("2.0") { $0.append("orders@2.0") }
        }.migrate(FleetRunOptions(maxTenantsInFlight: 1)) { events.append(describe($0)) }

        #expect(events.all == ["a: started", "a: finished", "x: failed: no stores for x", "b: started", "b: finished"])
        #expect(report.migrated == 2 && report.failures.map(\.tenant.key) == ["x"])
        #expect(report.failures.first?.message == "no stores for x")
        #expect(fleet.contents("a") == ["orders@2.0"] && fleet.contents("b") == ["orders@2.0"])
    }

    @Test func aSourceThatFailsPartWayStopsTheRunAndTheReportSaysWhy() throws {
        let fleet = InMemoryFleet(["a", "b", "c"])
        let source = FailingSource(keys: ["a", "b", "c"], failAfter: 2, walksBeforeFailing: 1)
        let report = try fleet.migrate(FleetRunOptions(maxTenantsInFlight: 1), tenants: source)

        #expect(fleet.events.all == ["a: started", "a: finished", "b: started", "b: finished"])
        #expect(report.stop == .sourceFailed(message: "the tenants table went away") && !report.succeeded)
        #expect(report.migrated == 2 && report.tenants == 3)
        #expect(fleet.contents("c").isEmpty)
    }

    @Test func aSourceThatCannotBeCountedIsAFleetErrorBeforeAnyTenant() throws {
        let fleet = InMemoryFleet(["a", "b"])
        let source = FailingSource(keys: ["a", "b"], failAfter: 1, walksBeforeFailing: 0)
        #expect(throws: FleetError.sourceUnreadable(source: "failing source", message: "the tenants table went away")) {
            try fleet.migrate(FleetRunOptions(), tenants: source)
        }
        #expect(fleet.log.all.isEmpty)
    }

    @Test func theAsynchronousRunMigratesAsTheBlockingOneDoes() async throws {
        let fleet = InMemoryFleet(["a", "b", "c"], failing: ["b"])
        let report = try await fleet.fleet().migrate(FleetRunOptions(maxTenantsInFlight: 2))
        #expect(report.migrated == 2 && report.failures.map(\.tenant.key) == ["b"])
        #expect(fleet.contents("c") == ["orders@2.0", "orders@2.1"])
    }
}

/// A source whose walks after the first `walksBeforeFailing` throw once `failAfter` tenants are listed.
struct FailingSource: TenantSource {
    let keys: [String]
    let failAfter: Int
    let walksBeforeFailing: Int
    let walks = Shared(0)

    var description: String { "failing source" }

    func makeTenantIterator() -> Iterator {
        let walk = walks.update { $0 += 1; return $0 - 1 }
        return Iterator(keys: keys, failAfter: walk < walksBeforeFailing ? Int.max : failAfter)
    }

    struct Iterator: TenantIterator {
        let keys: [String]
        let failAfter: Int
        var index = 0

        mutating func next() throws -> Tenant? {
            guard index < failAfter else { throw TestFailure(message: "the tenants table went away") }
            guard index < keys.count else { return nil }
            defer { index += 1 }
            return Tenant(keys[index])
        }
    }
}
