/// What happens to a migration that is not deferred but depends on a deferred one (directly, or
/// by coming after it in its manager's order).
///
/// ```swift
/// coordinator.dependentsOfDeferred = .finishInline   // the launch waits for what they need
/// ```
public enum DependentsOfDeferredPolicy: String, Sendable, Hashable, Codable {
    /// The dependent is deferred too, and runs in the background once what it needs is done (the
    /// default): deferring a migration is a promise to keep it off the launch, and a dependent
    /// registered without thought must not silently pull it back in.
    case wait
    /// The deferred migrations that a migration which is not deferred needs run at launch,
    /// before it: for a dependent the app cannot start without.
    case finishInline
}
