/// One step of a ``MigrationPlan``: a migration to run, or a level to record.
public struct PlannedStep: Sendable, Hashable, Codable, CustomStringConvertible {
    /// What a step does.
    public enum Action: String, Sendable, Hashable, Codable {
        /// Runs the migration to ``PlannedStep/version`` and records it as the level.
        case migrate
        /// Records ``PlannedStep/version`` as the level without running anything (first launch
        /// with the ``FirstLaunchPolicy/baseline`` policy).
        case baseline
        /// Throws away a rebuildable store's contents written by a newer app
        /// (``NewerStorePolicy/reset``).
        case reset
        /// Runs the manager's app-version-change hook and records ``PlannedStep/version``, the
        /// app version.
        case appVersionChange
    }

    /// Identifies a step within a plan. It reads `library@2.0` for a migration, and
    /// `library:baseline@2.0`, `thumbnails:reset` and `prefs:appVersionChange@2.0` for the others;
    /// it is encoded as its three fields, since a manager's name may contain `:` and `@`.
    public struct ID: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The manager the step belongs to.
        public let manager: String
        /// What the step does.
        public let action: Action
        /// The version the step records, if any.
        public let version: Version?

        public var description: String {
            switch (action, version) {
            case (.migrate, let version?): return "\(manager)@\(version)"
            case (_, let version?): return "\(manager):\(action.rawValue)@\(version)"
            case (_, nil): return "\(manager):\(action.rawValue)"
            }
        }

        init(manager: String, action: Action, version: Version?) {
            self.manager = manager
            self.action = action
            self.version = version
        }
    }

    /// The manager the step belongs to.
    public let manager: String
    /// What the step does.
    public let action: Action
    /// The migration's version, the level a baseline records, or the app version an
    /// app-version-change records; `nil` for a reset.
    public let version: Version?
    /// For ``Action/appVersionChange``, the app version recorded before (`nil` the first time).
    public let previousAppVersion: Version?
    /// The steps that must finish first: the previous step of the same manager and the pending
    /// migrations this one depends on.
    public let dependencies: [ID]
    /// The wave the step belongs to: steps of one wave depend only on steps of earlier waves and
    /// could all run at once.
    public let wave: Int

    /// The step's identifier.
    public var id: ID { ID(manager: manager, action: action, version: version) }

    public var description: String {
        var text = id.description
        if action == .appVersionChange { text += " (from \(previousAppVersion?.description ?? "none"))" }
        if !dependencies.isEmpty { text += " after " + dependencies.map(\.description).joined(separator: ", ") }
        return text
    }
}
