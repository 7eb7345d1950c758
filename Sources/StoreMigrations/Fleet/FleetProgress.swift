import Foundation

/// Where a fleet run stands: how many tenants ended, and how, and the time left at the rate so
/// far. Every ``FleetEvent`` carries one, taken as the event happened.
public struct FleetProgress: Sendable, Hashable, Codable, CustomStringConvertible {
    /// How many tenants the fleet has, counted before the run started.
    public let total: Int
    /// How many tenants ran their steps, all of them applied.
    public let migrated: Int
    /// How many tenants had nothing to do.
    public let upToDate: Int
    /// How many tenants failed: their template, their plan or one of their steps threw.
    public let failed: Int
    /// How many tenants the run will not start: the failure budget was spent, or the canary
    /// wave failed.
    public let notStarted: Int
    /// How many tenants another worker sharing the fleet's claims ended (``FleetClaims``).
    public let byOtherWorkers: Int
    /// How many tenants are migrating now.
    public let running: Int
    /// The seconds since the run started.
    public let elapsed: TimeInterval

    /// How many tenants are done with, one way or another.
    public var ended: Int { migrated + upToDate + failed + notStarted + byOtherWorkers }

    /// The seconds the tenants left should take at the rate of those that ended so far; `nil`
    /// before any ended.
    public var estimatedTimeLeft: TimeInterval? {
        let worked = migrated + upToDate + failed + byOtherWorkers
        guard worked > 0, elapsed > 0 else { return nil }
        return Double(max(0, total - ended)) * elapsed / Double(worked)
    }

    /// `120 of 1000 tenants: 100 migrated, 15 up to date, 5 failed; 4 running, about 3 min left`.
    public var description: String {
        var text = "\(ended) of \(total) tenant\(total == 1 ? "" : "s"): \(migrated) migrated, \(upToDate) up to date, \(failed) failed"
        if notStarted > 0 { text += ", \(notStarted) not started" }
        if byOtherWorkers > 0 { text += ", \(byOtherWorkers) by other workers" }
        if running > 0 { text += "; \(running) running" }
        if ended < total, let left = estimatedTimeLeft { text += ", about \(Self.duration(left)) left" }
        return text
    }

    static func duration(_ seconds: TimeInterval) -> String {
        if seconds < 90 { return "\(Int(seconds.rounded(.up))) s" }
        if seconds < 5_400 { return "\(Int((seconds / 60).rounded(.up))) min" }
        return String(format: "%.1f h", seconds / 3_600)
    }
}
