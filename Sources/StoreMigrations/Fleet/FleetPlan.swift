import Foundation

/// Where a fleet stands, computed by ``MigrationFleet/plan(postDeploy:maxTenantsInFlight:examplesPerGroup:)``
/// without migrating anything: each tenant planned as its coordinator plans it, and the plans
/// summed up in groups, so that a fleet of many thousands reads in a few lines.
///
/// ```swift
/// let plan = try fleet.plan()
/// print(plan)
/// // Fleet plan to app version 2.1: 1000 tenants, 842 to migrate, 157 up to date, 1 failed.
/// //   levels:
/// //     orders 1.0: 842 tenants (acme, globex, initech, umbrella, wayne and 837 more)
/// //   …
/// //   pending:
/// //     842 tenants: orders@2.0, orders@2.1 (acme, globex, initech, umbrella, wayne and 837 more)
/// ```
///
/// Groups name a few tenants each (``examplesPerGroup``, the first ones the source lists), never
/// all of them: a plan's size grows with the number of distinct levels and pending step lists,
/// not with the number of tenants.
public struct FleetPlan: Sendable, Hashable, Codable, CustomStringConvertible {
    /// How many tenants have one manager at one level.
    public struct Level: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The manager's name.
        public let manager: String
        /// The level its stores record, `nil` where it has none (a first launch).
        public let level: Version?
        /// How many tenants have the manager at that level.
        public let tenants: Int
        /// The keys of the first of them, in the source's order.
        public let examples: [String]

        /// `orders 1.0: 842 tenants (acme, globex and 840 more)`.
        public var description: String {
            "\(manager) \(level?.description ?? "none"): " + FleetPlan.counted(tenants, examples: examples)
        }
    }

    /// Tenants whose plans have the same steps, in the same order.
    public struct StepGroup: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The steps each of these tenants has to run, in plan order.
        public let steps: [PlannedStep.ID]
        /// How many tenants have exactly these steps.
        public let tenants: Int
        /// The keys of the first of them, in the source's order.
        public let examples: [String]

        /// `842 tenants: orders@2.0, orders@2.1 (acme, globex and 840 more)`.
        public var description: String {
            "\(tenants) tenant\(tenants == 1 ? "" : "s"): " + steps.map(\.description).joined(separator: ", ")
                + " (" + FleetPlan.listed(examples, of: tenants) + ")"
        }
    }

    /// A tenant that could not be planned, or whose run would be refused.
    public struct TenantFailure: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The tenant's key.
        public let tenant: String
        /// What went wrong: the error the template or the plan threw, or why the run would be
        /// refused (``MigrationPlan/blockingErrors``).
        public let message: String

        public var description: String { "\(tenant): \(message)" }
    }

    /// A resumable migration of one tenant that has committed batches.
    public struct TenantProgress: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The tenant's key.
        public let tenant: String
        /// The manager of the migration.
        public let manager: String
        /// How far it has got and where it resumes.
        public let progress: StepProgress

        public var description: String { "\(tenant): \(manager) \(progress)" }
    }

    /// The app version the fleet migrates to.
    public let appVersion: Version
    /// How many tenants the source listed.
    public let tenants: Int
    /// How many of them have nothing to do.
    public let upToDate: Int
    /// How many tenants have each manager at each level, by manager (in the order the first
    /// tenant registers them) and then by level, ascending.
    public let levels: [Level]
    /// The tenants with steps to run, grouped by their list of steps, most tenants first.
    public let pending: [StepGroup]
    /// The post-deploy steps held back (``PostDeployMigration``), grouped likewise; empty when
    /// the plan includes them.
    public let held: [StepGroup]
    /// How many tenants have resumable migrations part way.
    public let inProgress: Int
    /// Those migrations, for the first such tenants.
    public let inProgressExamples: [TenantProgress]
    /// How many tenants could not be planned, or would be refused.
    public let failed: Int
    /// The first of them, with what went wrong.
    public let failures: [TenantFailure]
    /// At most how many tenants each group names.
    public let examplesPerGroup: Int

    /// How many tenants have steps to run.
    public var toMigrate: Int { pending.reduce(0) { $0 + $1.tenants } }

    /// Whether no tenant has anything to do and none failed. Post-deploy steps held back do not
    /// count, as in ``MigrationPlan/isUpToDate``.
    public var isUpToDate: Bool { pending.isEmpty && failed == 0 }

    public var description: String {
        var lines = ["Fleet plan to app version \(appVersion): " + summary]
        if !levels.isEmpty {
            lines.append("  levels:")
            lines += levels.map { "    \($0)" }
        }
        if !pending.isEmpty {
            lines.append("  pending:")
            lines += pending.map { "    \($0)" }
        }
        if !held.isEmpty {
            lines.append("  held for the deployment (post-deploy):")
            lines += held.map { "    \($0)" }
        }
        if inProgress > 0 {
            lines.append("  in progress: " + Self.counted(inProgress, examples: []))
            lines += inProgressExamples.map { "    \($0)" }
        }
        if failed > 0 {
            lines.append("  failed: " + Self.counted(failed, examples: []))
            lines += failures.map { "    \($0)" }
            if failed > failures.count { lines.append("    and \(failed - failures.count) more") }
        }
        return lines.joined(separator: "\n")
    }

    private var summary: String {
        if tenants == 0 { return "no tenants." }
        var parts = ["\(tenants) tenant\(tenants == 1 ? "" : "s")"]
        if isUpToDate {
            parts.append("up to date.")
            return parts.joined(separator: ", ")
        }
        parts.append("\(toMigrate) to migrate")
        parts.append("\(upToDate) up to date")
        if failed > 0 { parts.append("\(failed) failed") }
        return parts.joined(separator: ", ") + "."
    }

    /// `3 tenants (a, b, c)`, or `1 tenant` without examples.
    static func counted(_ count: Int, examples: [String]) -> String {
        "\(count) tenant\(count == 1 ? "" : "s")" + (examples.isEmpty ? "" : " (" + listed(examples, of: count) + ")")
    }

    /// `a, b and 840 more`.
    static func listed(_ examples: [String], of count: Int) -> String {
        examples.joined(separator: ", ") + (count > examples.count ? " and \(count - examples.count) more" : "")
    }
}
