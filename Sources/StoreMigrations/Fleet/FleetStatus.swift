import Foundation

/// Who did what in a fleet shared by several workers (``FleetClaims``): how many tenants each
/// worker migrated, failed or holds now, and the tenants running or failed, read from any
/// machine with ``MigrationFleet/status()``.
///
/// ```swift
/// print(try fleet.status())
/// // Fleet status to app version 2.1: 998 migrated, 1 failed, 1 running.
/// //   worker web-3:4121: 250 migrated, 1 running, from 10:02:11 to 10:03:40
/// //   running globex: web-3:4121 since 10:03:39 (attempt 2)
/// //   failed initech: web-1:977 at 10:02:58: orders@2.1 failed: …
/// ```
public struct FleetStatus: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Where a claimed tenant stands.
    public enum State: String, Sendable, Hashable, Codable {
        /// A worker holds it now.
        case running
        /// The worker that held it died: the next worker to find steps to run there takes it
        /// over. Its last step may have committed, the tenant up to date.
        case interrupted
        /// Its steps all applied.
        case migrated
        /// It failed.
        case failed
    }

    /// One tenant's claim: who took it, when, and how it ended.
    public struct Entry: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The tenant's key.
        public let tenant: String
        /// Where it stands.
        public let state: State
        /// The worker that took it last.
        public let worker: String
        /// When that worker took it.
        public let startedAt: Date
        /// When it ended, if it did.
        public let endedAt: Date?
        /// How many times a worker took it.
        public let attempts: Int
        /// Why it failed, for a failed tenant.
        public let message: String?

        public init(
            tenant: String, state: State, worker: String, startedAt: Date, endedAt: Date?, attempts: Int, message: String?
        ) {
            self.tenant = tenant
            self.state = state
            self.worker = worker
            self.startedAt = startedAt
            self.endedAt = endedAt
            self.attempts = attempts
            self.message = message
        }

        /// `globex: web-3:4121 since 10:03:39 (attempt 2)`.
        public var description: String {
            let attempt = attempts > 1 ? " (attempt \(attempts))" : ""
            switch state {
            case .running, .interrupted: return "\(tenant): \(worker) since \(FleetStatus.time(startedAt))\(attempt)"
            case .migrated, .failed:
                let end = endedAt.map(FleetStatus.time) ?? "?"
                return "\(tenant): \(worker) at \(end)\(attempt)" + (message.map { ": \($0)" } ?? "")
            }
        }
    }

    /// What one worker did.
    public struct Worker: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The worker's name (host and process id unless it was given one).
        public let worker: String
        /// How many tenants it migrated.
        public let migrated: Int
        /// How many tenants it failed.
        public let failed: Int
        /// How many tenants it holds now, or held when it died (``State/interrupted``).
        public let running: Int
        /// When it took its first tenant.
        public let firstStart: Date
        /// When it ended its last, if it ended any.
        public let lastEnd: Date?

        public init(worker: String, migrated: Int, failed: Int, running: Int, firstStart: Date, lastEnd: Date?) {
            self.worker = worker
            self.migrated = migrated
            self.failed = failed
            self.running = running
            self.firstStart = firstStart
            self.lastEnd = lastEnd
        }

        public var description: String {
            var text = "worker \(worker): \(migrated) migrated"
            if failed > 0 { text += ", \(failed) failed" }
            if running > 0 { text += ", \(running) running" }
            return text + ", from \(FleetStatus.time(firstStart))" + (lastEnd.map { " to \(FleetStatus.time($0))" } ?? "")
        }
    }

    /// The app version the claims are for.
    public let appVersion: Version
    /// How many tenants workers migrated.
    public let migrated: Int
    /// How many tenants failed.
    public let failed: Int
    /// How many tenants a live worker holds.
    public let running: Int
    /// How many tenants a worker held when it died.
    public let interrupted: Int
    /// Every worker that took a tenant, by name.
    public let workers: [Worker]
    /// The tenants running, then those interrupted, then those failed, each by key.
    public let entries: [Entry]

    public init(
        appVersion: Version, migrated: Int, failed: Int, running: Int, interrupted: Int, workers: [Worker], entries: [Entry]
    ) {
        self.appVersion = appVersion
        self.migrated = migrated
        self.failed = failed
        self.running = running
        self.interrupted = interrupted
        self.workers = workers
        self.entries = entries
    }

    public var description: String {
        var lines = [
            "Fleet status to app version \(appVersion): \(migrated) migrated, \(failed) failed, \(running) running"
                + (interrupted > 0 ? ", \(interrupted) interrupted." : ".")
        ]
        lines += workers.map { "  \($0)" }
        lines += entries.map { "  \($0.state.rawValue) \($0)" }
        return lines.joined(separator: "\n")
    }

    static func time(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withTime, .withColonSeparatorInTime]
        return formatter.string(from: date)
    }
}
