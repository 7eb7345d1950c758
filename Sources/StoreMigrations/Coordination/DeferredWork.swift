import Dispatch

/// Where the work a launch leaves goes on: deferred migrations, and resumable ones whose launch
/// budget ran out.
///
/// ```swift
/// coordinator.deferredWork = .manual   // run it from a BGProcessingTask instead
/// ```
public enum DeferredWork: Sendable, Hashable {
    /// On a queue of the coordinator's at `qos`, started as the launch's `run()` returns.
    case background(qos: DispatchQoS.QoSClass)
    /// Only when the app calls ``MigrationCoordinator/runDeferred(queue:completion:)``, from a
    /// background task of its own; otherwise at the next launch.
    case manual
}
