import Dispatch
import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

/// The scheduler alone keeps a store's steps apart: a probe store with no lock of its own, shared
/// by two managers, never sees two transactions at once, while an independent probe store runs at
/// the same time.
@Suite struct SchedulerProbeTests {
    /// Registers `versions` on `manager`, each appending `name@version` to the probe's value.
    func register(_ versions: [Version], on manager: MigrationManager<ProbeStore>, _ extra: [Version: @Sendable () -> Void] = [:]) {
        for version in versions {
            let entry = "\(manager.name)@\(version)"
            let action = extra[version]
            manager.register(version) { value in
                action?()
                value.append(entry)
            }
        }
    }

    @Test func oneStepAtATimePerStoreWhileIndependentStoresOverlap() throws {
        let meter = InFlightMeter()
        let shared = ProbeStore(name: "shared", meter: meter)
        let independent = ProbeStore(name: "independent", meter: meter)
        let coordinator = MigrationCoordinator(appVersion: "1.3")
        coordinator.maxConcurrentStores = 4
        let first = try coordinator.manager("first", store: shared)
        let second = try coordinator.manager("second", store: shared)
        let other = try coordinator.manager("other", store: independent)

        // first@1.0 and other@1.0 each wait, inside their store's transaction, for the other to
        // arrive: both arrive only if the two stores run at once.
        let rendezvous = Rendezvous("first", "other", timeout: eventWaitBound)
        let versions: [Version] = ["1.0", "1.1", "1.2", "1.3"]
        register(versions, on: first, ["1.0": { rendezvous.arrive("first") }])
        register(versions, on: second)
        register(["1.0", "1.1"], on: other, ["1.0": { rendezvous.arrive("other") }])

        let report = try coordinator.run()
        #expect(report.steps.count == 10 && report.steps.allSatisfy { $0.outcome == .applied })
        #expect(rendezvous.arrivals == ["first": true, "other": true], "the independent stores did not overlap")
        #expect(meter.maximum("shared") == 1, "two steps of the shared store ran at once")
        #expect(shared.maxInFlightSeen == 1)
        #expect(meter.maximum("independent") == 1)
        #expect(meter.maximum("shared+independent") == 2)

        // No step's transaction overwrote another's.
        let value = shared.contents
        #expect(value.filter { $0.hasPrefix("first@") } == versions.map { "first@\($0)" })
        #expect(value.filter { $0.hasPrefix("second@") } == versions.map { "second@\($0)" })
        #expect(value.count == 8)
        #expect(try shared.readRecords().mapValues(\.appliedVersions) == ["first": versions, "second": versions])
        #expect(independent.contents == ["other@1.0", "other@1.1"])
    }

    @Test func oneStoreAtATimeWhenMaxConcurrentStoresIsOne() throws {
        let meter = InFlightMeter()
        let coordinator = MigrationCoordinator(appVersion: "1.1")
        coordinator.maxConcurrentStores = 1
        for index in 0..<3 {
            let manager = try coordinator.manager("m\(index)", store: ProbeStore(name: "store\(index)", meter: meter, pause: 0.005))
            register(["1.0", "1.1"], on: manager)
        }
        let report = try coordinator.run()
        #expect(report.steps.count == 6 && report.succeeded)
        #expect(meter.maximum("store0+store1+store2") == 1)
    }
}

/// A store with no lock around its transactions: only the scheduler keeps them apart. Its
/// transaction counts itself in an unsynchronised `inFlight`, as a store would that relies on
/// the scheduler, and in a locked ``InFlightMeter`` that the tests read; then it pauses, so that
/// an overlapping step would be seen.
final class ProbeStore: MigrationStore, @unchecked Sendable {
    typealias Content = [String]

    let name: String
    let meter: InFlightMeter
    let pause: TimeInterval
    // Unsynchronised on purpose: nothing excludes two transactions but the scheduler.
    private var inFlight = 0
    private(set) var maxInFlightSeen = 0
    // Guards only the memory of the two values below between transactions, never a whole
    // transaction: a lost update still shows when two overlap.
    private let memory = NSLock()
    private var records: [String: MigrationRecord] = [:]
    private var value: [String] = []

    init(name: String, meter: InFlightMeter, pause: TimeInterval = 0.02) {
        self.name = name
        self.meter = meter
        self.pause = pause
    }

    var description: String { "probe store \(name)" }

    var contents: [String] { memory.withLock { value } }

    func readRecords() throws -> [String: MigrationRecord] {
        memory.withLock { records }
    }

    func transaction<T>(
        _ request: TransactionRequest, _ body: (inout [String: MigrationRecord], inout [String]) throws -> T
    ) throws -> T {
        inFlight += 1
        maxInFlightSeen = max(maxInFlightSeen, inFlight)
        meter.enter(name)
        defer {
            meter.leave(name)
            inFlight -= 1
        }
        var records = memory.withLock { self.records }
        var value = memory.withLock { self.value }
        Thread.sleep(forTimeInterval: pause)
        let result = try body(&records, &value)
        memory.withLock {
            self.records = records
            self.value = value
        }
        return result
    }
}

/// Two parties that each wait, at most `timeout` seconds, for the other to arrive.
final class Rendezvous: @unchecked Sendable {
    private let lock = NSLock()
    private let timeout: TimeInterval
    private let parties: [String]
    private let semaphores: [String: DispatchSemaphore]
    private var results: [String: Bool] = [:]

    init(_ first: String, _ second: String, timeout: TimeInterval) {
        self.timeout = timeout
        parties = [first, second]
        semaphores = [first: DispatchSemaphore(value: 0), second: DispatchSemaphore(value: 0)]
    }

    /// Whether each party that arrived met the other.
    var arrivals: [String: Bool] { lock.withLock { results } }

    /// Announces `party`, one of the two, and waits for the other.
    func arrive(_ party: String) {
        let other = parties.first { $0 != party }!
        semaphores[party]!.signal()
        let met = semaphores[other]!.wait(timeout: .now() + timeout) == .success
        lock.withLock { results[party] = met }
    }
}
