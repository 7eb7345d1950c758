import Foundation

/// What a fleet run did: how many tenants migrated, had nothing to do, failed or were not
/// started, and each failed tenant with its error.
///
/// ```swift
/// let report = try fleet.migrate()
/// print(report)   // Fleet migration to app version 2.1: 1000 tenants in 41.20 s: 998 migrated, …
/// for failure in report.failures { alert(failure.tenant.key, failure.message) }
/// ```
///
/// A run returns its report whether tenants failed or not: a failed tenant is left as its own
/// run left it (applied steps stay applied), and the next fleet run takes it again.
public struct FleetReport: Sendable, Codable, CustomStringConvertible {
    /// A tenant that failed.
    public struct Failure: Sendable, Codable, CustomStringConvertible {
        /// The tenant.
        public let tenant: Tenant
        /// The error's description: a ``MigrationRunError`` names the failed step and what
        /// applied before it.
        public let message: String
        /// The error the template, the plan or the run threw (not encoded).
        public let error: (any Error)?

        private enum CodingKeys: String, CodingKey { case tenant, message }

        init(tenant: Tenant, error: any Error) {
            self.tenant = tenant
            message = "\(error)"
            self.error = error
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            tenant = try container.decode(Tenant.self, forKey: .tenant)
            message = try container.decode(String.self, forKey: .message)
            error = nil
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(tenant, forKey: .tenant)
            try container.encode(message, forKey: .message)
        }

        public var description: String { "\(tenant): \(message)" }
    }

    /// Why a run stopped starting tenants before the end of the fleet.
    public enum Stop: Sendable, Hashable, Codable, CustomStringConvertible {
        /// More tenants failed than ``FleetRunOptions/failureBudget`` accepts.
        case failureBudgetExceeded
        /// A tenant of the canary wave (``FleetRunOptions/canary``) failed.
        case canaryFailed
        /// The tenant source threw part way (`message` says what): the tenants after it were
        /// never listed.
        case sourceFailed(message: String)

        public var description: String {
            switch self {
            case .failureBudgetExceeded: return "the failure budget was spent: the tenants after it were not started"
            case .canaryFailed: return "the canary wave failed: the rest of the fleet was not started"
            case .sourceFailed(let message): return "the tenant source failed part way (\(message)): the tenants after it were not listed"
            }
        }
    }

    /// The app version the tenants were migrated to.
    public let appVersion: Version
    /// When the run started.
    public let startedAt: Date
    /// How long it took, counting the fleet included, in seconds.
    public let duration: TimeInterval
    /// How many tenants the fleet had when counted, before the run started.
    public let tenants: Int
    /// How many tenants ran their steps, all of them applied.
    public let migrated: Int
    /// How many tenants had nothing to do.
    public let upToDate: Int
    /// How many tenants another worker sharing the fleet's claims ended (``FleetClaims``).
    public let byOtherWorkers: Int
    /// How many tenants the run did not start (``stop`` says why).
    public let notStarted: Int
    /// Every failed tenant, in the source's order, with its error.
    public let failures: [Failure]
    /// Why the run stopped starting tenants, if it did.
    public let stop: Stop?

    /// How many tenants failed.
    public var failed: Int { failures.count }

    /// Whether every tenant listed was migrated or had nothing to do.
    public var succeeded: Bool { failures.isEmpty && stop == nil }

    public var description: String {
        var lines = [
            "Fleet migration to app version \(appVersion): \(tenants) tenant\(tenants == 1 ? "" : "s") in "
                + Self.format(duration) + ": \(migrated) migrated, \(upToDate) up to date, \(failed) failed, \(notStarted) not started"
                + (byOtherWorkers > 0 ? ", \(byOtherWorkers) by other workers." : ".")
        ]
        lines += failures.map { "  failed \($0)" }
        if let stop { lines.append("  stopped: \(stop).") }
        if !failures.isEmpty || stop != nil {
            lines.append("  Tenants that migrated stay migrated; fix the cause and run again: the next run takes only the tenants not up to date.")
        }
        return lines.joined(separator: "\n")
    }

    private static func format(_ seconds: TimeInterval) -> String {
        seconds < 1 ? String(format: "%.1f ms", seconds * 1_000) : String(format: "%.2f s", seconds)
    }
}
