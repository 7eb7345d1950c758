/// What an observer of a fleet run is told, one event at a time, in the order they happen.
///
/// ```swift
/// let report = try fleet.migrate(options) { event in
///     if case .failed = event { print(event) }   // globex: failed: …
///     print(event.progress)                      // 120 of 1000 tenants: …, about 3 min left
/// }
/// ```
///
/// Events come from the fleet's threads, never two at once: an observer must be quick, and may
/// keep state behind a lock of its own.
public enum FleetEvent: Sendable, CustomStringConvertible {
    /// A tenant has steps to run and starts running them.
    case started(Tenant, FleetProgress)
    /// A tenant's steps all applied.
    case finished(Tenant, MigrationReport, FleetProgress)
    /// A tenant's template, plan or run threw; the other tenants go on.
    case failed(Tenant, any Error, FleetProgress)
    /// A tenant did not run: it had nothing to do, or the run stopped starting tenants.
    case skipped(Tenant, FleetSkipReason, FleetProgress)

    /// The tenant the event is about.
    public var tenant: Tenant {
        switch self {
        case .started(let tenant, _), .finished(let tenant, _, _), .failed(let tenant, _, _), .skipped(let tenant, _, _):
            return tenant
        }
    }

    /// Where the run stood right after the event.
    public var progress: FleetProgress {
        switch self {
        case .started(_, let progress), .finished(_, _, let progress), .failed(_, _, let progress),
             .skipped(_, _, let progress):
            return progress
        }
    }

    /// One line for a log: `globex: skipped (up to date)`.
    public var description: String {
        switch self {
        case .started(let tenant, _): return "\(tenant): started"
        case let .finished(tenant, report, _):
            let applied = report.steps.filter { $0.outcome == .applied }.count
            return "\(tenant): finished, \(applied) step\(applied == 1 ? "" : "s") applied"
        case let .failed(tenant, error, _): return "\(tenant): failed: \(error)"
        case let .skipped(tenant, reason, _): return "\(tenant): skipped (\(reason))"
        }
    }
}

/// Why a fleet run did not run a tenant.
public enum FleetSkipReason: String, Sendable, Hashable, Codable, CustomStringConvertible {
    /// The tenant had nothing to do.
    case upToDate
    /// More tenants failed than the failure budget accepts.
    case failureBudgetExceeded
    /// A tenant of the canary wave failed.
    case canaryFailed
    /// Another worker sharing the fleet's claims (``FleetClaims``) migrated the tenant, or
    /// failed it, since this one started.
    case endedByAnotherWorker

    public var description: String {
        switch self {
        case .upToDate: return "up to date"
        case .failureBudgetExceeded: return "the failure budget is spent"
        case .canaryFailed: return "the canary wave failed"
        case .endedByAnotherWorker: return "ended by another worker"
        }
    }
}
