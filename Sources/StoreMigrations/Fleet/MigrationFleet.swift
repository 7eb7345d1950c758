import Dispatch
import Foundation

/// Migrates the same managers across the stores of many tenants (a schema, a database or a
/// SQLite file per customer) as one plan: one ``MigrationCoordinator`` per tenant, made from a
/// template, with a cap on tenants in flight, failures kept to their tenant, a failure budget and
/// canary waves.
///
/// ```swift
/// let tenants = TenantList(keys: customerKeys)
/// let fleet = MigrationFleet(appVersion: "2.1", tenants: tenants) { tenant, coordinator in
///     let url = folder.appendingPathComponent("\(tenant.key).sqlite")
///     let orders = try coordinator.manager("orders", store: SQLiteStore(url: url))
///     orders.register("2.0") { db in try db.execute("ALTER TABLE orders ADD COLUMN reference text") }
///     orders.register("2.1") { db in try db.execute("UPDATE orders SET reference = id") }
/// }
/// print(try fleet.plan())   // 842 tenants: orders@2.0, orders@2.1 (…)
/// let report = try fleet.migrate(
///     FleetRunOptions(maxTenantsInFlight: 8, failureBudget: .failures(3), canary: .first(20)))
/// ```
///
/// The fleet reads its tenants as a stream (``TenantSource``) and keeps nothing per tenant but
/// the failures of a run and a few examples per group of a plan: its memory does not grow with
/// the number of tenants. Each tenant's coordinator is made when the tenant's turn comes and let
/// go of when it is done, with its stores and their connections.
///
/// A run migrates only the tenants whose plan is not up to date, so a run after a failure or a
/// kill takes only what is left; within a tenant, its coordinator skips the steps already applied.
public final class MigrationFleet: Sendable {
    /// Registers one tenant's managers and stores on a fresh coordinator, as an app's launch
    /// does for its own: called once per tenant for each plan and each run.
    public typealias Template = @Sendable (_ tenant: Tenant, _ coordinator: MigrationCoordinator) throws -> Void

    /// The version every tenant is migrated to.
    public let appVersion: Version
    /// Where the tenants come from.
    public let tenants: any TenantSource
    /// Where the workers sharing the fleet claim its tenants, if they share it.
    public let claims: (any FleetClaims)?
    private let template: Template

    /// Creates a fleet of the tenants of `tenants`, each migrated to `appVersion` by the
    /// managers `template` registers; with `claims`, one of several workers that run the same
    /// fleet at once, each tenant migrated by one of them (see ``FleetClaims``).
    public init(appVersion: Version, tenants: some TenantSource, claims: (any FleetClaims)? = nil, template: @escaping Template) {
        self.appVersion = appVersion
        self.tenants = tenants
        self.claims = claims
        self.template = template
    }

    /// Who did what, read from the fleet's claims: the tenants each worker migrated, failed or
    /// holds, from any machine.
    ///
    /// - Throws: ``FleetError/noClaims`` for a fleet made without claims; the claims' error when
    ///   their database cannot be read.
    public func status() throws -> FleetStatus {
        guard let claims else { throw FleetError.noClaims }
        return try claims.status(appVersion: appVersion)
    }

    /// Plans every tenant, reading only, and sums the plans up: tenants per level of each
    /// manager, the pending steps grouped across the fleet, tenants held for the deployment,
    /// part way or failed.
    ///
    /// - Parameters:
    ///   - postDeploy: Whether to plan the post-deploy migrations with the rest.
    ///   - maxTenantsInFlight: At most how many tenants are read at once; `nil` for the number
    ///     of active processors.
    ///   - examplesPerGroup: At most how many tenants each group of the plan names.
    /// - Throws: ``FleetError/sourceUnreadable(source:message:)`` when the source cannot be read.
    ///   A tenant whose template or plan throws is counted in ``FleetPlan/failed``, not thrown.
    public func plan(postDeploy: Bool = false, maxTenantsInFlight: Int? = nil, examplesPerGroup: Int = 5) throws -> FleetPlan {
        let builder = FleetPlanBuilder(appVersion: appVersion, examplesPerGroup: examplesPerGroup)
        var iterator = try startWalk()
        var taken = 0
        try FleetWorkers.walk(
            next: { try iterator.next() }, limit: maxTenantsInFlight ?? ProcessInfo.processInfo.activeProcessorCount,
            mayStart: { _ in
                defer { taken += 1 }
                return taken
            },
            notStarted: { _ in }
        ) { [appVersion, template] tenant, number in
            { resources in
                do {
                    let coordinator = MigrationCoordinator(appVersion: appVersion)
                    coordinator.workerResources = resources
                    try template(tenant, coordinator)
                    builder.add(number, tenant, plan: try coordinator.plan(postDeploy: postDeploy))
                } catch {
                    builder.add(number, tenant, failure: "\(error)")
                }
            }
        }
        return builder.plan
    }

    /// Migrates every tenant that is not up to date, blocking the calling thread until the run
    /// ends; returns the report whether tenants failed or not.
    ///
    /// The fleet is counted first (one walk over the source), for the progress's total and a
    /// failure budget given as a share. Tenants then start in the source's order, at most
    /// ``FleetRunOptions/maxTenantsInFlight`` at once and sharing at most
    /// ``FleetRunOptions/maxConnections`` connections per database, the canary wave first. A tenant whose
    /// template, plan or run throws is reported and the others go on, until the failure budget
    /// is spent: then no tenant starts, those running finish, and the rest are reported not
    /// started.
    ///
    /// - Parameters:
    ///   - options: The caps on tenants and connections, the failure budget, the canary wave,
    ///     post-deploy migrations.
    ///   - observer: Told of each ``FleetEvent``, one at a time.
    /// - Throws: ``FleetError`` before any tenant starts: the source cannot be read, the
    ///   options are invalid, or the source cannot keep the cap on connections.
    @available(*, noasync, message: "it blocks its thread until the run ends; call 'try await migrate()' from an async function")
    public func migrate(_ options: FleetRunOptions = FleetRunOptions(), observer: (@Sendable (FleetEvent) -> Void)? = nil) throws -> FleetReport {
        try migrateAndWait(options, observer: observer)
    }

    /// Migrates every tenant that is not up to date from asynchronous code, the work on the
    /// fleet's threads; as ``migrate(_:observer:)-95oxv``.
    public func migrate(
        _ options: FleetRunOptions = FleetRunOptions(), observer: (@Sendable (FleetEvent) -> Void)? = nil
    ) async throws -> FleetReport {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue(label: "StoreMigrations.MigrationFleet.migrate").async {
                continuation.resume(with: Result { try self.migrateAndWait(options, observer: observer) })
            }
        }
    }

    @available(*, noasync)
    private func migrateAndWait(_ options: FleetRunOptions, observer: (@Sendable (FleetEvent) -> Void)?) throws -> FleetReport {
        let startedAt = Date()
        let clockStart = ContinuousClock.now
        if case .share(let share) = options.failureBudget, !(0...1).contains(share) { throw FleetError.invalidFailureShare(share) }
        var cappedSource: (any ConnectionCappedTenantSource)?
        if let cap = options.maxConnections {
            guard cap >= 1 else { throw FleetError.invalidConnectionCap(cap) }
            guard let capped = tenants as? any ConnectionCappedTenantSource else {
                throw FleetError.connectionCapNotKept(source: tenants.description)
            }
            cappedSource = capped
        }
        let total = try count()
        // The run's cap is the source's only while the run lasts: a plan or run after it gets
        // the source's own again.
        let replacedCap = options.maxConnections.flatMap { cappedSource?.capConnections(perDatabase: $0) }
        defer { if let replacedCap { cappedSource?.capConnections(perDatabase: replacedCap) } }
        let run = FleetRun(total: total, budget: options.failureBudget, clockStart: clockStart, observer: observer)
        let limit = options.maxTenantsInFlight
        let work = { [appVersion, template, claims] (tenant: Tenant, number: Int) -> @Sendable (WorkerResources) -> Void in
            { resources in
                Self.migrate(
                    tenant, number: number, appVersion: appVersion, template: template, claims: claims, postDeploy: options.postDeploy,
                    run: run, resources: resources)
            }
        }
        do {
            switch options.canary {
            case nil:
                var iterator = try startWalk()
                try FleetWorkers.walk(next: { try iterator.next() }, limit: limit, mayStart: run.mayStart, notStarted: run.notStarted, work: work)
            case .first(let count):
                var iterator = try startWalk()
                var pulled = 0
                let nextCanary = { () throws -> Tenant? in
                    guard pulled < count else { return nil }
                    pulled += 1
                    return try iterator.next()
                }
                try FleetWorkers.walk(next: nextCanary, limit: limit, mayStart: run.mayStart, notStarted: run.notStarted, work: work)
                run.endCanaryWave()
                try FleetWorkers.walk(next: { try iterator.next() }, limit: limit, mayStart: run.mayStart, notStarted: run.notStarted, work: work)
            case .group(let group):
                var canaries = try startWalk()
                try FleetWorkers.walk(
                    next: { try Self.next(of: &canaries) { $0.group == group } }, limit: limit, mayStart: run.mayStart,
                    notStarted: run.notStarted, work: work)
                run.endCanaryWave()
                var rest = try startWalk()
                try FleetWorkers.walk(
                    next: { try Self.next(of: &rest) { $0.group != group } }, limit: limit, mayStart: run.mayStart,
                    notStarted: run.notStarted, work: work)
            }
            // Tenants another worker held: once it ends them, or dies and leaves them here.
            while case let held = run.takeBusy(), !held.isEmpty {
                Thread.sleep(forTimeInterval: options.claimRetryInterval.seconds)
                var retry = TenantList(held).makeTenantIterator()
                try FleetWorkers.walk(next: { retry.next() }, limit: limit, mayStart: run.mayStart, notStarted: run.notStarted, work: work)
            }
        } catch {
            run.sourceFailed("\(error)")
        }
        return run.report(appVersion: appVersion, startedAt: startedAt)
    }

    /// The `number`th tenant to start: plans it, and runs it when it has anything to do. Its
    /// records are read for both plans, the check's and the run's, with what its thread keeps
    /// (`resources`); its steps use its stores' own connections.
    @available(*, noasync)
    private static func migrate(
        _ tenant: Tenant, number: Int, appVersion: Version, template: Template, claims: (any FleetClaims)?, postDeploy: Bool,
        run: FleetRun, resources: WorkerResources
    ) {
        var isRunning = false
        var isClaimed = false
        do {
            let coordinator = MigrationCoordinator(appVersion: appVersion)
            coordinator.workerResources = resources
            try template(tenant, coordinator)
            // A plan that `run()` would refuse is not up to date: the run then throws the refusal.
            if try coordinator.plan(postDeploy: postDeploy).isUpToDate {
                run.upToDate(tenant)
                return
            }
            switch try claims?.claim(tenant, appVersion: appVersion) {
            case .busy?:
                run.busy(tenant)
                return
            case .endedElsewhere?:
                run.endedElsewhere(tenant)
                return
            case .claimed?:
                isClaimed = true
            case nil:
                break
            }
            run.started(tenant)
            isRunning = true
            // To the end, deferred migrations included: a fleet run has no launch to hurry and no
            // background to leave work to.
            let report = try coordinator.runToCompletion(targets: nil, postDeploy: postDeploy)
            if isClaimed {
                isClaimed = false
                try claims?.release(tenant, appVersion: appVersion, result: .migrated)
            }
            run.finished(tenant, report)
        } catch {
            // A release that fails leaves the claim to die with the worker's session: the next
            // worker to take the tenant finds what this one did.
            if isClaimed { try? claims?.release(tenant, appVersion: appVersion, result: .failed(message: "\(error)")) }
            run.failed(tenant, number: number, error, wasRunning: isRunning)
        }
    }

    /// The next tenant of `iterator` that `isIncluded` keeps.
    private static func next(of iterator: inout any TenantIterator, where isIncluded: (Tenant) -> Bool) throws -> Tenant? {
        while let tenant = try iterator.next() {
            if isIncluded(tenant) { return tenant }
        }
        return nil
    }

    /// The tenants of the source, counted in a walk of their own: its iterator, and whatever
    /// session it holds, is let go of before any tenant starts.
    private func count() throws -> Int {
        var total = 0
        var counting = try startWalk()
        do {
            while try counting.next() != nil { total += 1 }
        } catch {
            throw FleetError.sourceUnreadable(source: tenants.description, message: "\(error)")
        }
        return total
    }

    private func startWalk() throws -> any TenantIterator {
        do {
            return try tenants.makeTenantIterator()
        } catch {
            throw FleetError.sourceUnreadable(source: tenants.description, message: "\(error)")
        }
    }
}
