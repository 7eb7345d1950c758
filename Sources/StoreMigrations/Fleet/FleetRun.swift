import Foundation

/// The state of one fleet run, shared by the thread that walks the source and the tenants'
/// threads: the counts, the failures, whether tenants may still start. Events are sent with the
/// lock held, so that an observer hears them one at a time, each with the counts it made.
final class FleetRun: @unchecked Sendable {
    // @unchecked: every property but the constants is only touched with `lock` held.
    private let lock = NSLock()
    private let total: Int
    /// How many failures the budget accepts; `nil` for no budget.
    private let acceptedFailures: Int?
    private let clockStart: ContinuousClock.Instant
    private let observer: (@Sendable (FleetEvent) -> Void)?
    private var migrated = 0
    private var upToDateCount = 0
    private var notStartedCount = 0
    private var byOtherWorkers = 0
    /// Tenants another live worker held when their turn came, to try again after the walk.
    private var busy: [Tenant] = []
    private var running = 0
    /// With the number of the tenant in the order tenants started, to report them in order.
    private var failures: [(number: Int, failure: FleetReport.Failure)] = []
    private var taken = 0
    private var stop: FleetReport.Stop?

    init(
        total: Int, budget: FleetRunOptions.FailureBudget?, clockStart: ContinuousClock.Instant,
        observer: (@Sendable (FleetEvent) -> Void)?
    ) {
        self.total = total
        switch budget {
        case nil: acceptedFailures = nil
        case .failures(let count): acceptedFailures = max(0, count)
        case .share(let share): acceptedFailures = Int((share * Double(total)).rounded(.down))
        }
        self.clockStart = clockStart
        self.observer = observer
    }

    /// The number of `tenant` in the order tenants start, if it may start: failures are
    /// reported in that order, whichever ends first.
    func mayStart(_ tenant: Tenant) -> Int? {
        lock.withLock {
            guard stop == nil else { return nil }
            defer { taken += 1 }
            return taken
        }
    }

    /// Stops the run from starting tenants when the canary wave, just ended, had a failure.
    func endCanaryWave() {
        lock.withLock {
            if stop == nil, !failures.isEmpty { stop = .canaryFailed }
        }
    }

    func notStarted(_ tenant: Tenant) {
        lock.withLock {
            notStartedCount += 1
            let reason: FleetSkipReason = stop == .canaryFailed ? .canaryFailed : .failureBudgetExceeded
            observer?(.skipped(tenant, reason, progress))
        }
    }

    func upToDate(_ tenant: Tenant) {
        lock.withLock {
            upToDateCount += 1
            observer?(.skipped(tenant, .upToDate, progress))
        }
    }

    /// Another worker ended `tenant` since this run started.
    func endedElsewhere(_ tenant: Tenant) {
        lock.withLock {
            byOtherWorkers += 1
            observer?(.skipped(tenant, .endedByAnotherWorker, progress))
        }
    }

    /// Another live worker holds `tenant`: it is tried again after the walk.
    func busy(_ tenant: Tenant) {
        lock.withLock { busy.append(tenant) }
    }

    /// The tenants found busy since the last call, to try again; empty once the run stopped
    /// starting tenants, which reports them not started.
    func takeBusy() -> [Tenant] {
        lock.withLock {
            defer { busy = [] }
            guard stop != nil else { return busy }
            notStartedCount += busy.count
            return []
        }
    }

    func started(_ tenant: Tenant) {
        lock.withLock {
            running += 1
            observer?(.started(tenant, progress))
        }
    }

    func finished(_ tenant: Tenant, _ report: MigrationReport) {
        lock.withLock {
            running -= 1
            migrated += 1
            observer?(.finished(tenant, report, progress))
        }
    }

    /// The `number`th tenant failed: during its run (`wasRunning`), or before it started, when
    /// its template or plan threw.
    func failed(_ tenant: Tenant, number: Int, _ error: any Error, wasRunning: Bool) {
        lock.withLock {
            if wasRunning { running -= 1 }
            let position = failures.firstIndex { $0.number > number } ?? failures.count
            failures.insert((number, FleetReport.Failure(tenant: tenant, error: error)), at: position)
            if let acceptedFailures, failures.count > acceptedFailures, stop == nil { stop = .failureBudgetExceeded }
            observer?(.failed(tenant, error, progress))
        }
    }

    /// The source threw part way: nothing more starts.
    func sourceFailed(_ message: String) {
        lock.withLock { stop = .sourceFailed(message: message) }
    }

    private var progress: FleetProgress {
        FleetProgress(
            total: total, migrated: migrated, upToDate: upToDateCount, failed: failures.count, notStarted: notStartedCount,
            byOtherWorkers: byOtherWorkers, running: running, elapsed: (ContinuousClock.now - clockStart).seconds)
    }

    func report(appVersion: Version, startedAt: Date) -> FleetReport {
        lock.withLock {
            FleetReport(
                appVersion: appVersion, startedAt: startedAt, duration: (ContinuousClock.now - clockStart).seconds,
                tenants: total, migrated: migrated, upToDate: upToDateCount, byOtherWorkers: byOtherWorkers, notStarted: notStartedCount,
                failures: failures.map(\.failure), stop: stop)
        }
    }
}
