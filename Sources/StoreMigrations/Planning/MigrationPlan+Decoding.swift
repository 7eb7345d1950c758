/// Plans written by an earlier release decode: every field added since the first release
/// (a store created by its first step, deferred, post-deploy and in-progress migrations, late
/// migrations' names, edited migrations and their policy, held post-deploy steps, a development
/// mode's erase) reads as its "nothing of the kind" value when its key is missing, and a plan
/// kept as JSON by a deployment tool or a test fixture is still read after the library is
/// upgraded.
extension MigrationPlan {
    enum CodingKeys: String, CodingKey {
        case appVersion, managers, steps, diagnostics, postDeploySteps
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        appVersion = try container.decode(Version.self, forKey: .appVersion)
        managers = try container.decode([Manager].self, forKey: .managers)
        steps = try container.decode([PlannedStep].self, forKey: .steps)
        diagnostics = try container.decode([Diagnostic].self, forKey: .diagnostics)
        postDeploySteps = try container.decodeIfPresent([PlannedStep].self, forKey: .postDeploySteps) ?? []
    }
}

extension MigrationPlan.Manager {
    enum CodingKeys: String, CodingKey {
        case name, store, createsStore, level, firstLaunch, newerStore, pending, late, lateNames, latePolicy, ahead
        case deferred, postDeploy, heldBehindPostDeploy, inProgress, changedFingerprints, fingerprintPolicy, developmentErase
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decode(String.self, forKey: .name)
        store = try container.decode(String.self, forKey: .store)
        createsStore = try container.decodeIfPresent(Bool.self, forKey: .createsStore) ?? false
        level = try container.decodeIfPresent(Version.self, forKey: .level)
        firstLaunch = try container.decodeIfPresent(FirstLaunchDecision.self, forKey: .firstLaunch)
        newerStore = try container.decodeIfPresent(NewerStorePolicy.self, forKey: .newerStore)
        pending = try container.decode([Version].self, forKey: .pending)
        late = try container.decode([Version].self, forKey: .late)
        lateNames = try container.decodeIfPresent([Version: String].self, forKey: .lateNames) ?? [:]
        latePolicy = try container.decode(LateMigrationPolicy.self, forKey: .latePolicy)
        ahead = try container.decode([Version].self, forKey: .ahead)
        deferred = try container.decodeIfPresent([Version].self, forKey: .deferred) ?? []
        postDeploy = try container.decodeIfPresent([Version].self, forKey: .postDeploy) ?? []
        heldBehindPostDeploy = try container.decodeIfPresent([Version].self, forKey: .heldBehindPostDeploy) ?? []
        inProgress = try container.decodeIfPresent([StepProgress].self, forKey: .inProgress) ?? []
        changedFingerprints = try container.decodeIfPresent([FingerprintChange].self, forKey: .changedFingerprints) ?? []
        fingerprintPolicy = try container.decodeIfPresent(FingerprintPolicy.self, forKey: .fingerprintPolicy) ?? .warn
        developmentErase = try container.decodeIfPresent([FingerprintChange].self, forKey: .developmentErase)
    }
}
