import Foundation

/// Sums up tenants' plans into a ``FleetPlan`` as they arrive, from several threads and in any
/// order: what it keeps grows with the distinct levels and step lists, and a few examples each,
/// never with the number of tenants. Tenants are numbered in the source's order, so that the
/// examples and the groups' order are those of a plan made one tenant at a time.
final class FleetPlanBuilder: @unchecked Sendable {
    // @unchecked: every property but the constants is only touched with `lock` held.
    private let lock = NSLock()
    private let appVersion: Version
    private let limit: Int
    private var tenants = 0
    private var upToDate = 0
    private var levels: [LevelKey: Group] = [:]
    /// Where each manager first appears: the tenant's number, then its place in that tenant's plan.
    private var managerOrder: [String: (tenant: Int, position: Int)] = [:]
    private var pending: [[PlannedStep.ID]: Group] = [:]
    private var held: [[PlannedStep.ID]: Group] = [:]
    private var inProgress = 0
    private var progressExamples = FleetExamples<[FleetPlan.TenantProgress]>(limit: 0)
    private var failed = 0
    private var failures = FleetExamples<FleetPlan.TenantFailure>(limit: 0)

    private struct LevelKey: Hashable {
        let manager: String
        let level: Version?
    }

    private struct Group {
        var count = 0
        var examples: FleetExamples<String>

        mutating func add(_ index: Int, _ key: String) {
            count += 1
            examples.add(index, key)
        }
    }

    init(appVersion: Version, examplesPerGroup: Int) {
        self.appVersion = appVersion
        limit = max(0, examplesPerGroup)
        progressExamples = FleetExamples(limit: limit)
        failures = FleetExamples(limit: limit)
    }

    /// Adds the `index`th tenant of the source, planned.
    func add(_ index: Int, _ tenant: Tenant, plan: MigrationPlan) {
        if let refusal = plan.blockingErrors.first {
            add(index, tenant, failure: "\(refusal)")
            return
        }
        let progress = plan.managers.flatMap { manager in
            manager.inProgress.map { FleetPlan.TenantProgress(tenant: tenant.key, manager: manager.name, progress: $0) }
        }
        let steps = plan.steps.map(\.id)
        let heldSteps = plan.postDeploySteps.map(\.id)
        lock.withLock {
            tenants += 1
            for (position, manager) in plan.managers.enumerated() {
                if managerOrder[manager.name].map({ $0.tenant > index }) ?? true { managerOrder[manager.name] = (index, position) }
                let key = LevelKey(manager: manager.name, level: manager.level)
                levels[key, default: Group(examples: FleetExamples(limit: limit))].add(index, tenant.key)
            }
            if steps.isEmpty {
                upToDate += 1
            } else {
                pending[steps, default: Group(examples: FleetExamples(limit: limit))].add(index, tenant.key)
            }
            if !heldSteps.isEmpty { held[heldSteps, default: Group(examples: FleetExamples(limit: limit))].add(index, tenant.key) }
            if !progress.isEmpty {
                inProgress += 1
                progressExamples.add(index, progress)
            }
        }
    }

    /// Adds the `index`th tenant of the source, which could not be planned or would be refused.
    func add(_ index: Int, _ tenant: Tenant, failure message: String) {
        lock.withLock {
            tenants += 1
            failed += 1
            failures.add(index, FleetPlan.TenantFailure(tenant: tenant.key, message: message))
        }
    }

    var plan: FleetPlan {
        lock.withLock {
            let levelList = levels.sorted { lhs, rhs in
                let left = managerOrder[lhs.key.manager]!, right = managerOrder[rhs.key.manager]!
                if lhs.key.manager != rhs.key.manager { return (left.tenant, left.position) < (right.tenant, right.position) }
                switch (lhs.key.level, rhs.key.level) {
                case (nil, _): return true
                case (_, nil): return false
                case let (left?, right?): return left < right
                }
            }
            return FleetPlan(
                appVersion: appVersion, tenants: tenants, upToDate: upToDate,
                levels: levelList.map {
                    FleetPlan.Level(manager: $0.key.manager, level: $0.key.level, tenants: $0.value.count, examples: $0.value.examples.items)
                },
                pending: Self.ordered(pending), held: Self.ordered(held),
                inProgress: inProgress, inProgressExamples: progressExamples.items.flatMap { $0 },
                failed: failed, failures: failures.items, examplesPerGroup: limit)
        }
    }

    /// Most tenants first; of groups as large, the one whose first tenant comes first.
    private static func ordered(_ groups: [[PlannedStep.ID]: Group]) -> [FleetPlan.StepGroup] {
        groups.sorted { lhs, rhs in
            lhs.value.count != rhs.value.count
                ? lhs.value.count > rhs.value.count : lhs.value.examples.firstIndex < rhs.value.examples.firstIndex
        }
        .map { FleetPlan.StepGroup(steps: $0.key, tenants: $0.value.count, examples: $0.value.examples.items) }
    }
}
