/// The choice a ``FirstLaunchPolicy/decide(_:)`` closure makes.
public enum FirstLaunchDecision: String, Sendable, Hashable, Codable {
    /// Run every migration up to the app version.
    case runAll
    /// Record the app version as the level and run nothing.
    case baseline
}
