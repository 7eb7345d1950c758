import Dispatch
import Foundation
import Testing
import StoreMigrations
import TestSupport

/// Fleet runs over in-memory tenants: failures kept to their tenant, the failure budget, canary
/// waves, reruns, the cap on tenants in flight, and the source read no further than the tenants
/// running.
@Suite struct FleetRunTests {
    @Test func aTenantWhoseBodyThrowsFailsAloneAndTheReportNamesIt() throws {
        let fleet = InMemoryFleet(["a", "b", "c", "d", "e"], failing: ["c"])
        let report = try fleet.migrate(FleetRunOptions(maxTenantsInFlight: 2))

        for key in ["a", "b", "d", "e"] { #expect(fleet.contents(key) == ["orders@2.0", "orders@2.1"]) }
        #expect(fleet.contents("c") == ["orders@2.0"], "2.0 stays applied, 2.1 rolled back")
        #expect(report.tenants == 5 && report.migrated == 4 && report.upToDate == 0 && report.notStarted == 0)
        #expect(report.failures.map(\.tenant.key) == ["c"])
        let failure = try #require(report.failures.first)
        let runError = try #require(failure.error as? MigrationRunError)
        #expect(runError.underlyingError as? TestFailure == TestFailure(message: "boom in c"))
        #expect(failure.message == "\(runError)")
        #expect(failure.message.contains("Migration orders@2.1 on store c failed: boom in c. Its level stays at 2.0"))
        #expect(report.stop == nil && !report.succeeded)
        #expect(report.description.contains("\n  failed c: Migration orders@2.1 on store c failed: boom in c."))
    }

    @Test func theFailureBudgetStopsStartingTenantsOnceExceeded() throws {
        let fleet = InMemoryFleet(["a", "b", "c", "d", "e", "f", "g", "h"], failing: ["b", "d", "f"])
        let report = try fleet.migrate(FleetRunOptions(maxTenantsInFlight: 1, failureBudget: .failures(1)))

        #expect(fleet.events.all == [
            "a: started", "a: finished",
            "b: started", "b: failed: boom in b",
            "c: started", "c: finished",
            "d: started", "d: failed: boom in d",
            "e: skipped failureBudgetExceeded", "f: skipped failureBudgetExceeded",
            "g: skipped failureBudgetExceeded", "h: skipped failureBudgetExceeded",
        ])
        #expect(fleet.log.all == [
            "a: orders@2.0", "a: orders@2.1", "b: orders@2.0", "c: orders@2.0", "c: orders@2.1", "d: orders@2.0",
        ])
        for key in ["e", "f", "g", "h"] { #expect(fleet.contents(key).isEmpty) }
        #expect(report.migrated == 2 && report.notStarted == 4)
        #expect(report.failures.map(\.tenant.key) == ["b", "d"])
        #expect(report.stop == .failureBudgetExceeded)
    }

    @Test func aShareBudgetCountsTheFleetFirst() throws {
        let fleet = InMemoryFleet(["a", "b", "c", "d", "e", "f", "g", "h"], failing: ["b", "d", "f"])
        // A quarter of 8 tenants: 2 failures accepted, the third stops the run.
        let report = try fleet.migrate(FleetRunOptions(maxTenantsInFlight: 1, failureBudget: .share(0.25)))

        #expect(fleet.events.all.filter { $0.hasSuffix("started") }.map { String($0.prefix(1)) } == ["a", "b", "c", "d", "e", "f"])
        #expect(fleet.events.all.suffix(2) == ["g: skipped failureBudgetExceeded", "h: skipped failureBudgetExceeded"])
        #expect(report.failures.map(\.tenant.key) == ["b", "d", "f"] && report.migrated == 3 && report.notStarted == 2)
        #expect(report.stop == .failureBudgetExceeded)
    }

    @Test func aShareOutsideZeroToOneIsRefusedBeforeAnyTenant() throws {
        let fleet = InMemoryFleet(["a"])
        #expect(throws: FleetError.invalidFailureShare(1.5)) {
            try fleet.migrate(FleetRunOptions(failureBudget: .share(1.5)))
        }
        #expect(fleet.log.all.isEmpty)
    }

    @Test func aFailedCanaryWaveStopsTheRest() throws {
        let fleet = InMemoryFleet(["a", "b", "c", "d", "e"], failing: ["b"])
        let report = try fleet.migrate(FleetRunOptions(maxTenantsInFlight: 2, canary: .first(2)))

        #expect(Set(fleet.events.all.prefix(4)) == ["a: started", "a: finished", "b: started", "b: failed: boom in b"])
        #expect(fleet.events.all.dropFirst(4) == ["c: skipped canaryFailed", "d: skipped canaryFailed", "e: skipped canaryFailed"])
        #expect(fleet.contents("a") == ["orders@2.0", "orders@2.1"])
        for key in ["c", "d", "e"] { #expect(fleet.contents(key).isEmpty) }
        #expect(report.stop == .canaryFailed && report.notStarted == 3 && report.migrated == 1)
        #expect(report.failures.map(\.tenant.key) == ["b"])
    }

    @Test func aSucceededCanaryWaveLetsTheRestRunAndTheirFailuresDoNotStopIt() throws {
        let fleet = InMemoryFleet(["a", "b", "c", "d", "e"], failing: ["c"])
        let report = try fleet.migrate(FleetRunOptions(maxTenantsInFlight: 1, canary: .first(2)))

        #expect(fleet.events.all.filter { $0.hasSuffix("started") } == ["a: started", "b: started", "c: started", "d: started", "e: started"])
        #expect(report.migrated == 4 && report.failures.map(\.tenant.key) == ["c"] && report.stop == nil)
    }

    @Test func aCanaryGroupRunsFirstWhereverItsTenantsAreListed() throws {
        let fleet = InMemoryFleet(["a", "b", "c", "d"])
        let report = try fleet.migrate(
            FleetRunOptions(maxTenantsInFlight: 1, canary: .group("canary")), groups: ["b": "canary", "d": "canary"])

        #expect(fleet.events.all.filter { $0.hasSuffix("started") } == ["b: started", "d: started", "a: started", "c: started"])
        #expect(report.migrated == 4 && report.succeeded)
    }

    @Test func aFailedCanaryGroupStopsTheOtherGroups() throws {
        let fleet = InMemoryFleet(["a", "b", "c", "d"], failing: ["d"])
        let report = try fleet.migrate(
            FleetRunOptions(maxTenantsInFlight: 1, canary: .group("canary")), groups: ["b": "canary", "d": "canary"])

        #expect(fleet.events.all == [
            "b: started", "b: finished", "d: started", "d: failed: boom in d",
            "a: skipped canaryFailed", "c: skipped canaryFailed",
        ])
        #expect(report.stop == .canaryFailed)
    }

    @Test func aRerunMigratesOnlyTheTenantsNotUpToDate() throws {
        let fleet = InMemoryFleet(["a", "b", "c", "d"], failing: ["c"])
        let first = try fleet.migrate(FleetRunOptions(maxTenantsInFlight: 1))
        #expect(first.migrated == 3 && first.failures.map(\.tenant.key) == ["c"])
        let firstBodies = fleet.log.all.count

        fleet.failing.value = []
        let second = try fleet.fleet().migrate(FleetRunOptions(maxTenantsInFlight: 1)) { fleet.events.append("rerun " + describe($0)) }
        #expect(fleet.events.all.filter { $0.hasPrefix("rerun") } == [
            "rerun a: skipped upToDate", "rerun b: skipped upToDate", "rerun c: started", "rerun c: finished",
            "rerun d: skipped upToDate",
        ])
        #expect(Array(fleet.log.all.dropFirst(firstBodies)) == ["c: orders@2.1"], "2.0 of c applied by the first run")
        #expect(second.migrated == 1 && second.upToDate == 3 && second.succeeded)
        #expect(fleet.contents("c") == ["orders@2.0", "orders@2.1"])
        #expect(try fleet.fleet().plan().isUpToDate)
    }

    @Test func progressCountsEveryTenantAndEndsWithTheReportsCounts() throws {
        let fleet = InMemoryFleet(["a", "b", "c", "d", "e"], failing: ["d"])
        _ = try fleet.migrate(FleetRunOptions(maxTenantsInFlight: 1))  // a, b, c, e migrated
        fleet.failing.value = []
        let progress = Shared<[FleetProgress]>([])
        let report = try fleet.fleet().migrate(FleetRunOptions(maxTenantsInFlight: 1)) { event in progress.update { $0.append(event.progress) } }

        #expect(progress.value.map(\.ended) == [1, 2, 3, 3, 4, 5])
        #expect(progress.value.map(\.running) == [0, 0, 0, 1, 0, 0])
        #expect(progress.value.allSatisfy { $0.total == 5 })
        let last = try #require(progress.value.last)
        #expect(last.migrated == report.migrated && last.upToDate == report.upToDate && last.failed == 0 && report.migrated == 1)
        #expect(last.estimatedTimeLeft == 0 || last.elapsed == 0)
    }

    @Test func noMoreTenantsRunAtOnceThanTheCap() throws {
        let keys = (0..<8).map { "t\($0)" }
        let running = Shared(0), most = Shared(0)
        // The first two tenants wait for each other: the run reaches its cap of 2.
        let bothArrived = DispatchSemaphore(value: 0)
        let arrivals = Shared(0)
        let fleet = MigrationFleet(appVersion: "1.0", tenants: TenantList(keys: keys)) { tenant, coordinator in
            let manager = try coordinator.manager("m", store: InMemoryStore<Int>(0, name: "store \(tenant.key)"))
            manager.register("1.0") { _ in
                let now = running.update { $0 += 1; return $0 }
                most.update { $0 = max($0, now) }
                let arrival = arrivals.update { $0 += 1; return $0 }
                if arrival == 2 {
                    bothArrived.signal()
                    bothArrived.signal()
                }
                if arrival <= 2 {
                    guard bothArrived.waitForEvent() else { throw TestFailure(message: "the second tenant never started") }
                }
                running.update { $0 -= 1 }
            }
        }
        let report = try fleet.migrate(FleetRunOptions(maxTenantsInFlight: 2))
        #expect(report.migrated == 8 && report.succeeded)
        #expect(most.value == 2)
    }

    @Test func theSourceIsReadNoFurtherAheadThanTheTenantsRunning() throws {
        let keys = (0..<20).map { "t\($0)" }
        let fleet = InMemoryFleet(keys)
        let source = CountingSource(keys: keys, ended: { fleet.log.all.count / 2 })
        let report = try fleet.migrate(FleetRunOptions(maxTenantsInFlight: 3), tenants: source)
        #expect(report.migrated == 20)
        // The second walk is the run's (the first counted the fleet). A tenant is taken only
        // once a place is free: at most 2 of the tenants before it are still running.
        let lags = source.lags.value.filter { $0.walk == 1 }.map(\.lag)
        #expect(lags.count == 20)
        #expect(lags.allSatisfy { $0 <= 2 }, "\(lags)")
    }
}

/// A source that notes, for each tenant taken, how many tenants taken before it had not ended.
struct CountingSource: TenantSource {
    let keys: [String]
    let ended: @Sendable () -> Int
    let lags = Shared<[(walk: Int, lag: Int)]>([])
    let walks = Shared(0)

    var description: String { "counting source" }

    func makeTenantIterator() -> Iterator {
        Iterator(source: self, walk: walks.update { $0 += 1; return $0 - 1 })
    }

    struct Iterator: TenantIterator {
        let source: CountingSource
        let walk: Int
        var index = 0

        mutating func next() -> Tenant? {
            guard index < source.keys.count else { return nil }
            source.lags.update { $0.append((walk, index - source.ended())) }
            defer { index += 1 }
            return Tenant(source.keys[index])
        }
    }
}
