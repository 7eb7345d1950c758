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
        /// Runs the squashed migration to ``PlannedStep/version`` on a store with none of its
        /// range applied, and records every migration the squash replaces as applied
        /// (``MigrationManager/squash(from:through:dependsOn:options:_:)-(_,_,_,_,Body)``). A store
        /// part-way through the range runs the replaced migrations (``migrate`` steps) instead.
        case squash
    }

    /// Identifies a step within a plan. It reads `library@2.0` for a migration, and
    /// `library:baseline@2.0`, `library:squash@1.9`, `thumbnails:reset` and
    /// `prefs:appVersionChange@2.0` for the others; it is encoded as its three fields, since a manager's name may contain `:` and `@`.
    public struct ID: Sendable, Hashable, Codable, CustomStringConvertible {
        // Stored version first, so that the action fits in the version's last word: 48 bytes
        // instead of 56 (a plan of 100,000 steps keeps as many identifiers). Coded in the order
        // the fields are documented.

        /// The version the step records, if any.
        public let version: Version?
        /// What the step does.
        public let action: Action
        /// The manager the step belongs to.
        public let manager: String

        public var description: String {
            switch (action, version) {
            case (.migrate, let version?): return "\(manager)@\(version)"
            case (_, let version?): return "\(manager):\(action.rawValue)@\(version)"
            case (_, nil): return "\(manager):\(action.rawValue)"
            }
        }

        package init(manager: String, action: Action, version: Version?) {
            self.manager = manager
            self.action = action
            self.version = version
        }

        private enum CodingKeys: String, CodingKey {
            case manager, action, version
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                manager: try container.decode(String.self, forKey: .manager),
                action: try container.decode(Action.self, forKey: .action),
                version: try container.decodeIfPresent(Version.self, forKey: .version))
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(manager, forKey: .manager)
            try container.encode(action, forKey: .action)
            try container.encodeIfPresent(version, forKey: .version)
        }
    }

    // A plan of 100,000 steps makes (and frees) 100,000 of these, so a step keeps its
    // dependencies without an array of its own in the usual case, a single dependency on the
    // previous step of its manager (the chain): only that step's action and version are kept,
    // since its manager is this step's. Any other list, the previous app version of an
    // app-version change, and a migration's name go into one object for the step. Nothing is
    // shared between steps, so that making, copying and freeing a step changes no atomic
    // reference count. The fields are plain (no enum), so that copying a step, as a run's report
    // does for every step, copies bytes and two references.

    /// The migration's version, the level a baseline records, or the app version an
    /// app-version-change records; `nil` for a reset.
    public let version: Version?
    /// What the step does.
    public let action: Action
    /// The chain predecessor's action, when the previous step of the manager is the step's only
    /// dependency; its version is `chainVersion` when `chainHasVersion`.
    private let chainAction: Action?
    private let chainHasVersion: Bool
    private let chainVersion: Version
    private let storedWave: Int32
    /// The manager the step belongs to.
    public let manager: String
    /// Every dependency, the previous app version and the migration's name, when they are not
    /// the chain alone.
    private let others: SharedLinks?

    /// The wave the step belongs to: steps of one wave depend only on steps of earlier waves and
    /// could all run at once.
    public var wave: Int { Int(storedWave) }

    /// The version a step without a chain predecessor keeps in its place.
    private static let noVersion = Version(0)

    /// Holds ``OtherLinks``, which its base class keeps from being `Sendable`.
    private struct SharedLinks: @unchecked Sendable {
        // @unchecked: the links are written once, by `OtherLinks.make`, before any step holds
        // them, and only read after.
        let links: OtherLinks
    }

    /// Dependencies other than the chain alone, and the previous app version: one allocation,
    /// the identifiers stored after the header rather than in an array of their own.
    private final class OtherLinks: ManagedBuffer<OtherLinksHeader, ID> {
        static func make(_ dependencies: [ID], previousAppVersion: Version?, name: String?) -> OtherLinks {
            let buffer = create(minimumCapacity: dependencies.count) { _ in
                OtherLinksHeader(count: dependencies.count, previousAppVersion: previousAppVersion, name: name)
            }
            let links = unsafeDowncast(buffer, to: OtherLinks.self)
            links.withUnsafeMutablePointerToElements { elements in
                for (index, dependency) in dependencies.enumerated() { (elements + index).initialize(to: dependency) }
            }
            return links
        }

        deinit {
            _ = withUnsafeMutablePointers { header, elements in elements.deinitialize(count: header.pointee.count) }
        }

        var count: Int { withUnsafeMutablePointerToHeader { $0.pointee.count } }
        var previousAppVersion: Version? { withUnsafeMutablePointerToHeader { $0.pointee.previousAppVersion } }
        var name: String? { withUnsafeMutablePointerToHeader { $0.pointee.name } }

        subscript(index: Int) -> ID {
            precondition(index >= 0 && index < count, "index out of range")
            return withUnsafeMutablePointerToElements { $0[index] }
        }

        var dependencies: [ID] {
            withUnsafeMutablePointers { header, elements in Array(UnsafeBufferPointer(start: elements, count: header.pointee.count)) }
        }
    }

    private struct OtherLinksHeader {
        let count: Int
        let previousAppVersion: Version?
        let name: String?
    }

    /// A step waiting only for `chain` (the previous step of its manager, as its action and
    /// version), or for nothing.
    init(manager: String, action: Action, version: Version?, chain: (action: Action, version: Version?)?, wave: Int) {
        self.version = version
        self.action = action
        self.chainAction = chain?.action
        self.chainHasVersion = chain?.version != nil
        self.chainVersion = chain?.version ?? Self.noVersion
        self.storedWave = Int32(wave)
        self.manager = manager
        self.others = nil
    }

    init(
        manager: String, action: Action, version: Version?, previousAppVersion: Version?, dependencies: [ID], wave: Int,
        name: String? = nil
    ) {
        let isChainAlone = previousAppVersion == nil && name == nil && dependencies.count <= 1
            && (dependencies.first.map { $0.manager == manager } ?? true)
        let chain = isChainAlone ? dependencies.first : nil
        self.version = version
        self.action = action
        self.chainAction = chain?.action
        self.chainHasVersion = chain?.version != nil
        self.chainVersion = chain?.version ?? Self.noVersion
        self.storedWave = Int32(wave)
        self.manager = manager
        self.others = isChainAlone
            ? nil : SharedLinks(links: OtherLinks.make(dependencies, previousAppVersion: previousAppVersion, name: name))
    }

    /// The migration's name (``MigrationOptions/name``), if it has one.
    public var name: String? { others?.links.name }

    /// For ``Action/appVersionChange``, the app version recorded before (`nil` the first time).
    public var previousAppVersion: Version? { others?.links.previousAppVersion }

    /// The steps that must finish first: the previous step of the same manager and the pending
    /// migrations this one depends on.
    public var dependencies: [ID] {
        if let others { return others.links.dependencies }
        return chainID.map { [$0] } ?? []
    }

    /// The chain predecessor's identifier, when it is the only dependency.
    private var chainID: ID? {
        chainAction.map { ID(manager: manager, action: $0, version: chainHasVersion ? chainVersion : nil) }
    }

    /// The dependencies, without making an array for a single one.
    var dependencyIDs: DependencyIDs { DependencyIDs(step: self) }

    /// The dependencies of a step as a collection.
    struct DependencyIDs: RandomAccessCollection {
        let step: PlannedStep

        var startIndex: Int { 0 }
        var endIndex: Int {
            if let others = step.others { return others.links.count }
            return step.chainAction == nil ? 0 : 1
        }

        subscript(position: Int) -> ID {
            if let others = step.others { return others.links[position] }
            precondition(position == 0, "index out of range")
            return step.chainID!
        }
    }

    /// The step's identifier.
    public var id: ID { ID(manager: manager, action: action, version: version) }

    /// The identifier followed by the migration's name, as reports and events show the step:
    /// `library@1.1 (add guids to events)`.
    public var title: String { id.description.titled(name) }

    public var description: String {
        var text = title
        if action == .appVersionChange { text += " (from \(previousAppVersion?.description ?? "none"))" }
        let dependencies = dependencyIDs
        if !dependencies.isEmpty { text += " after " + dependencies.map(\.description).joined(separator: ", ") }
        return text
    }

    // Equality, hashing and coding are those of the public fields, `dependencies` an array.

    public static func == (lhs: PlannedStep, rhs: PlannedStep) -> Bool {
        lhs.manager == rhs.manager && lhs.action == rhs.action && lhs.version == rhs.version
            && lhs.previousAppVersion == rhs.previousAppVersion && lhs.wave == rhs.wave
            && lhs.dependencyIDs.elementsEqual(rhs.dependencyIDs) && lhs.name == rhs.name
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(manager)
        hasher.combine(action)
        hasher.combine(version)
        hasher.combine(previousAppVersion)
        // As an array hashes: its count, then its elements.
        let dependencies = dependencyIDs
        hasher.combine(dependencies.count)
        for dependency in dependencies { hasher.combine(dependency) }
        hasher.combine(wave)
        hasher.combine(name)
    }

    private enum CodingKeys: String, CodingKey {
        case manager, action, version, name, previousAppVersion, dependencies, wave
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            manager: try container.decode(String.self, forKey: .manager),
            action: try container.decode(Action.self, forKey: .action),
            version: try container.decodeIfPresent(Version.self, forKey: .version),
            previousAppVersion: try container.decodeIfPresent(Version.self, forKey: .previousAppVersion),
            dependencies: try container.decode([ID].self, forKey: .dependencies),
            wave: try container.decode(Int.self, forKey: .wave),
            name: try container.decodeIfPresent(String.self, forKey: .name))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(manager, forKey: .manager)
        try container.encode(action, forKey: .action)
        try container.encodeIfPresent(version, forKey: .version)
        try container.encodeIfPresent(name, forKey: .name)
        try container.encodeIfPresent(previousAppVersion, forKey: .previousAppVersion)
        try container.encode(dependencies, forKey: .dependencies)
        try container.encode(wave, forKey: .wave)
    }
}
