import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

/// The run's cap on connections: given to a source that keeps one for the run only, refused
/// before any tenant when it is below 1 or the source cannot keep it.
@Suite struct FleetConnectionCapTests {
    @Test func theCapIsTheSourcesWhileTheRunLastsAndItsOwnAfter() throws {
        let fleet = InMemoryFleet(["a", "b", "c"])
        let source = CappedList(keys: ["a", "b", "c"], cap: 8)
        let seen = Shared<[Int]>([])
        let report = try fleet.fleet(tenants: source).migrate(FleetRunOptions(maxTenantsInFlight: 3, maxConnections: 2)) { event in
            if case .started = event { seen.update { $0.append(source.cap.value) } }
        }
        #expect(report.migrated == 3 && report.succeeded)
        #expect(seen.value == [2, 2, 2])
        #expect(source.cap.value == 8)
        #expect(source.caps.value == [2, 8])
    }

    @Test func noCapLeavesTheSourcesOwn() throws {
        let fleet = InMemoryFleet(["a"])
        let source = CappedList(keys: ["a"], cap: 8)
        _ = try fleet.fleet(tenants: source).migrate(FleetRunOptions())
        #expect(source.caps.value.isEmpty)
    }

    @Test func aCapBelowOneIsRefusedBeforeAnyTenant() throws {
        let fleet = InMemoryFleet(["a", "b"])
        let source = CappedList(keys: ["a", "b"], cap: 8)
        #expect(throws: FleetError.invalidConnectionCap(0)) {
            try fleet.fleet(tenants: source).migrate(FleetRunOptions(maxConnections: 0))
        }
        #expect(fleet.log.all.isEmpty && source.caps.value.isEmpty)
    }

    @Test func aSourceWhoseStoresShareNoConnectionsRefusesACap() throws {
        let fleet = InMemoryFleet(["a", "b"])
        #expect(throws: FleetError.connectionCapNotKept(source: "a list of 2 tenants")) {
            try fleet.fleet().migrate(FleetRunOptions(maxConnections: 4))
        }
        #expect(fleet.log.all.isEmpty)
        #expect("\(FleetError.connectionCapNotKept(source: "a list of 2 tenants"))".contains("No tenant was migrated; leave the cap out"))
    }
}

/// A list of tenants that keeps a cap on connections, recording each cap it is given.
struct CappedList: ConnectionCappedTenantSource {
    let keys: [String]
    let cap: Shared<Int>
    let caps = Shared<[Int]>([])

    init(keys: [String], cap: Int) {
        self.keys = keys
        self.cap = Shared(cap)
    }

    var description: String { "a capped list" }

    func makeTenantIterator() throws -> TenantList.Iterator { TenantList(keys: keys).makeTenantIterator() }

    func capConnections(perDatabase cap: Int) -> Int? {
        caps.update { $0.append(cap) }
        return self.cap.update { current in
            defer { current = cap }
            return current
        }
    }
}
