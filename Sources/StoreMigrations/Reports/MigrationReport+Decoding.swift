import Foundation

/// Reports written by an earlier release decode, as plans do (``MigrationPlan``): the fields
/// added since the first release (a store the run created, migrations past the app version,
/// edited migrations the run went on with) read as "none" when their key is missing.
extension MigrationReport {
    enum CodingKeys: String, CodingKey {
        case appVersion, startedAt, duration, planningDuration, steps, managers, diagnostics, changedFingerprints
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        appVersion = try container.decode(Version.self, forKey: .appVersion)
        startedAt = try container.decode(Date.self, forKey: .startedAt)
        duration = try container.decode(TimeInterval.self, forKey: .duration)
        planningDuration = try container.decode(TimeInterval.self, forKey: .planningDuration)
        steps = try container.decode([Step].self, forKey: .steps)
        managers = try container.decode([Manager].self, forKey: .managers)
        diagnostics = try container.decode([MigrationPlan.Diagnostic].self, forKey: .diagnostics)
        changedFingerprints = try container.decodeIfPresent([FingerprintChange].self, forKey: .changedFingerprints) ?? []
    }
}

extension MigrationReport.Manager {
    enum CodingKeys: String, CodingKey {
        case name, store, levelBefore, levelAfter, createdStore, ahead
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        store = try container.decode(String.self, forKey: .store)
        levelBefore = try container.decodeIfPresent(Version.self, forKey: .levelBefore)
        levelAfter = try container.decodeIfPresent(Version.self, forKey: .levelAfter)
        createdStore = try container.decodeIfPresent(Bool.self, forKey: .createdStore) ?? false
        ahead = try container.decodeIfPresent([Version].self, forKey: .ahead) ?? []
    }
}
