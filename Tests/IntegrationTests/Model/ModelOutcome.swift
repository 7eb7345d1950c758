/// What the model predicts and the real coordinator does for a scenario, in the same observable,
/// stable terms: per manager the plan's fields and steps, each body's calls in order, each step's
/// outcome, the records and the stores' data after each launch, and errors by case and manager.
struct ModelOutcome: Sendable, Hashable {
    var launches: [LaunchOutcome] = []
}

/// An error by its `MigrationError` case (or `injected`, a body's own throw) and the manager it names.
struct ErrorDescription: Sendable, Hashable, CustomStringConvertible {
    var kind: String
    var manager: String?

    var description: String { manager.map { "\(kind)(\($0))" } ?? kind }
}

struct ManagerPlanSummary: Sendable, Hashable {
    var steps: [String] = []
    var pending: [String] = []
    var late: [String] = []
    var ahead: [String] = []
    var inProgress: [String] = []
    var changedFingerprints: [String] = []
    var postDeploy: [String] = []
    var deferred: [String] = []
    var newerStore: String?
    var firstLaunch: String?
}

struct PlanSummary: Sendable, Hashable {
    var managers: [ManagerPlanSummary]
    var isUpToDate: Bool
}

enum RunResult: Sendable, Hashable {
    /// The run went through its steps: per manager, `step id=outcome` in plan order.
    case ran(succeeded: Bool, steps: [[String]])
    /// `run()` threw before any step: the model lists every error it accepts (the order of
    /// refusals of different rules is not specified), the real run the one it threw.
    case refused([ErrorDescription])
}

/// A manager's record as compared: versions, fingerprint texts (`-` for none) and progress.
struct RecordState: Sendable, Hashable, CustomStringConvertible {
    var level: String?
    var baseline: String?
    var appVersion: String?
    var applied: [String]
    var inProgress: [String]

    var description: String {
        "level \(level ?? "none"), baseline \(baseline ?? "none"), app \(appVersion ?? "none"), applied [\(applied.joined(separator: " "))]"
            + ", in progress [\(inProgress.joined(separator: " "))]"
    }
}

struct LaunchOutcome: Sendable, Hashable {
    /// `nil` when `plan()` threw (then `result` says why).
    var plan: PlanSummary?
    var result: RunResult
    /// The launches run at this one's `.planned` event: their plans and results.
    var interleaved: [LaunchOutcome] = []
    /// Per manager, the calls its bodies and hook received during the launch, in order.
    var calls: [[String]] = []
    var records: [RecordState] = []
    /// Per manager, the counters bodies keep in the store's data (units of work committed).
    var content: [[String: Int]] = []
}

extension ModelOutcome {
    /// Every difference between the model's outcome (`self`) and the real one, one line each;
    /// empty when they agree.
    func differences(from real: ModelOutcome) -> [String] {
        var lines: [String] = []
        for index in 0..<max(launches.count, real.launches.count) {
            guard index < launches.count, index < real.launches.count else {
                lines.append("launch \(index): missing on one side")
                continue
            }
            lines += launches[index].differences(from: real.launches[index], label: "launch \(index)")
        }
        return lines
    }
}

extension LaunchOutcome {
    func differences(from real: LaunchOutcome, label: String) -> [String] {
        var lines: [String] = []
        func check<T: Equatable>(_ field: String, _ model: T, _ actual: T) {
            if model != actual { lines.append("\(label) \(field): model \(model), real \(actual)") }
        }
        switch (plan, real.plan) {
        case let (model?, actual?):
            check("plan isUpToDate", model.isUpToDate, actual.isUpToDate)
            for manager in model.managers.indices where manager < actual.managers.count {
                let m = model.managers[manager], a = actual.managers[manager], name = "plan m\(manager)"
                check("\(name) steps", m.steps, a.steps)
                check("\(name) pending", m.pending, a.pending)
                check("\(name) late", m.late, a.late)
                check("\(name) ahead", m.ahead, a.ahead)
                check("\(name) inProgress", m.inProgress, a.inProgress)
                check("\(name) changedFingerprints", m.changedFingerprints, a.changedFingerprints)
                check("\(name) postDeploy", m.postDeploy, a.postDeploy)
                check("\(name) deferred", m.deferred, a.deferred)
                check("\(name) newerStore", m.newerStore, a.newerStore)
                check("\(name) firstLaunch", m.firstLaunch, a.firstLaunch)
            }
        default:
            check("plan", plan, real.plan)
        }
        switch (result, real.result) {
        case let (.refused(accepted), .refused(thrown)):
            if !thrown.allSatisfy({ accepted.contains($0) }) {
                lines.append("\(label) refusal: model \(accepted), real \(thrown)")
            }
        default:
            check("result", result, real.result)
        }
        check("interleaved launches", interleaved.count, real.interleaved.count)
        for (index, inner) in interleaved.enumerated() where index < real.interleaved.count {
            lines += inner.differences(from: real.interleaved[index], label: "\(label) interleaved")
        }
        check("calls", calls, real.calls)
        check("records", records, real.records)
        // A store that cannot show its data reports none.
        if !real.content.isEmpty { check("content", content, real.content) }
        return lines
    }
}
