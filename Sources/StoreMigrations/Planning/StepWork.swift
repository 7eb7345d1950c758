/// What one step of a plan does, in the one vocabulary the run, the step executor and the report
/// share: made from the plan by ``ExecutablePlan/work(ofStep:)``, carried out on a manager's store
/// by ``ManagerDefinition``, read back by the report. The public ``PlannedStep`` is made from the
/// same plan at the boundary, for people and their tools.
enum StepWork: Sendable, Hashable {
    /// Runs the migration at `position` among its manager's versions.
    case migrate(position: Int, version: Version)
    /// Records `version` as the baseline mark (first launch, ``FirstLaunchPolicy/baseline``).
    case baseline(Version)
    /// Throws away a rebuildable store's content written past `appVersion`.
    case reset(newerThan: Version)
    /// Runs the app-version hook and records `appVersion`.
    case appVersionChange(Version)
}

extension ExecutablePlan {
    /// The work of step `index`. The planner gives every step but a reset its version, and every
    /// migration its position: this is the one place that relies on it.
    func work(ofStep index: Int) -> StepWork {
        let step = plan.steps[index]
        switch step.action {
        case .reset:
            return .reset(newerThan: plan.appVersion)
        case .migrate:
            return .migrate(position: stepPositions[index], version: Self.version(of: step))
        case .baseline:
            return .baseline(Self.version(of: step))
        case .appVersionChange:
            return .appVersionChange(Self.version(of: step))
        }
    }

    private static func version(of step: PlannedStep) -> Version {
        guard let version = step.version else { preconditionFailure("the planner made \(step.id) without a version") }
        return version
    }
}
