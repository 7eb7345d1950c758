/// What the scheduler does with the rest of the work when a migration fails.
public enum FailurePolicy: String, Sendable, Hashable, Codable {
    /// Skip the failed step's transitive dependents and let independent work finish (the default).
    case continueIndependentWork
    /// Start nothing new after the first failure; steps already running finish.
    case stopOnFirstFailure
}
