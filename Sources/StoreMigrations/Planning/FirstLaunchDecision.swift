/// The choice a ``FirstLaunchPolicy/decide(_:)`` closure makes.
///
/// ```swift
/// library.firstLaunchPolicy = .decide { store in
///     // The 1.0 app wrote its database without this library: adopt it at 1.0.
///     try store.read { db in try db.tableExists("note") } ? .adopt(at: "1.0") : .runAll
/// }
/// ```
public enum FirstLaunchDecision: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Run every migration up to the app version.
    case runAll
    /// Record the app version as the level and run nothing.
    case baseline
    /// The store holds the data of an earlier release, written without this library: record
    /// `version` as the baseline mark (every migration at or below it counts as applied) and run
    /// the migrations after it, up to the app version, in the same run.
    ///
    /// What ``MigrationManager/baseline(at:)`` does before a run, decided while planning: the
    /// plan shows it and writes nothing, and a squash whose range starts at or below `version` is
    /// not taken (the store is part-way through it). `version` must be at or below the app version.
    case adopt(at: Version)

    /// `runAll`, `baseline`, or `adopt at 1.0`: the text plans show and encode.
    public var description: String {
        switch self {
        case .runAll: "runAll"
        case .baseline: "baseline"
        case .adopt(let version): "adopt at \(version)"
        }
    }

    private static let adoptPrefix = "adopt at "

    /// Decodes the text ``description`` gives (`runAll` and `baseline` as earlier releases wrote them).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        switch text {
        case "runAll": self = .runAll
        case "baseline": self = .baseline
        default:
            guard text.hasPrefix(Self.adoptPrefix), let version = Version(String(text.dropFirst(Self.adoptPrefix.count))) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "\"\(text)\" is not a first-launch decision: runAll, baseline or adopt at VERSION")
            }
            self = .adopt(at: version)
        }
    }

    /// Encodes the decision as its ``description``.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
