/// The rules every kind of step obeys in its transaction, against the record read again under
/// the store's lock, written once as a table over the kinds (``Step/Kind``). The step executor
/// asks ``StepExecutor/admit(_:_:record:checks:fingerprint:manager:store:)``, never a kind's own
/// function. (Post-deploy holds and transaction modes follow the registration, whatever the kind,
/// and are decided by the planner and the executor's transaction request.)
///
/// | kind             | newer store under the lock | fingerprint policy          | done when the record shows          | range part-way   |
/// |------------------|----------------------------|-----------------------------|-------------------------------------|------------------|
/// | migrate          | the manager's policy       | applied (at planning)       | the version applied                 | -                |
/// | batches          | the manager's policy       | applied and in progress     | the version applied                 | -                |
/// | baseline         | the manager's policy       | none                        | any level                           | -                |
/// | reset            | its reason to run          | none                        | no level past the app               | -                |
/// | appVersionChange | the manager's policy       | none                        | the app version recorded            | -                |
/// | squash           | the manager's policy       | applied (at planning)       | the version (the range's last) applied | refused       |
struct StepRules: Sendable, Hashable {
    /// Whether a record past the app version stops the step by the manager's
    /// ``NewerStorePolicy``: an old replica of a rolling deploy never reports success on a store a
    /// newer one migrated after it planned.
    let appliesNewerStorePolicy: Bool
    /// Whether the progress of committed batches, recorded under another fingerprint than the
    /// registration's, is refused under ``FingerprintPolicy/fail``.
    let comparesProgressFingerprint: Bool
    /// What in the record shows the step's work done, given the step's version (the migration's,
    /// the baseline mark, the app version a reset or a hook is for).
    let done: Done
    /// Whether a record showing part of the step's range applied, or in progress, refuses the
    /// step: a squashed body written for an empty range would run over the originals' work (a
    /// process with the originals ran some of them after this run planned).
    var refusesRangePartWay = false

    /// What in a record shows a step's work done.
    enum Done: Sendable, Hashable {
        /// The version is applied (in the set, or at or below the baseline mark).
        case versionApplied
        /// The manager has a level, whatever it is: there is nothing to adopt.
        case anyLevel
        /// The manager has no level past the version: another process reset the store already.
        case noLevelPast
        /// The version is the app version recorded for the hooks.
        case appVersionRecorded

        func holds(in record: MigrationRecord?, for version: Version) -> Bool {
            switch self {
            case .versionApplied: return record?.isApplied(version) ?? false
            case .anyLevel: return record?.level != nil
            case .noLevelPast: return record?.level.map { $0.base <= version } ?? true
            case .appVersionRecorded: return record?.appVersion == version
            }
        }
    }

    static func of(_ kind: Step.Kind) -> StepRules {
        switch kind {
        case .migrate:
            return StepRules(appliesNewerStorePolicy: true, comparesProgressFingerprint: false, done: .versionApplied)
        case .batches:
            return StepRules(appliesNewerStorePolicy: true, comparesProgressFingerprint: true, done: .versionApplied)
        case .baseline:
            return StepRules(appliesNewerStorePolicy: true, comparesProgressFingerprint: false, done: .anyLevel)
        case .reset:
            return StepRules(appliesNewerStorePolicy: false, comparesProgressFingerprint: false, done: .noLevelPast)
        case .appVersionChange:
            return StepRules(appliesNewerStorePolicy: true, comparesProgressFingerprint: false, done: .appVersionRecorded)
        case .squash:
            return StepRules(
                appliesNewerStorePolicy: true, comparesProgressFingerprint: false, done: .versionApplied, refusesRangePartWay: true)
        }
    }
}

/// What a run asks every step to check under the store's lock: the app version and the
/// manager's policies.
package struct StepChecks: Sendable, Hashable {
    /// The run's app version; `nil` for a step run outside a run (``MigrationManager/reset()``,
    /// tests), for which no store is newer.
    package var appVersion: Version?
    package var newerStorePolicy: NewerStorePolicy
    package var fingerprintPolicy: FingerprintPolicy

    package init(appVersion: Version?, newerStorePolicy: NewerStorePolicy = .fail, fingerprintPolicy: FingerprintPolicy = .warn) {
        self.appVersion = appVersion
        self.newerStorePolicy = newerStorePolicy
        self.fingerprintPolicy = fingerprintPolicy
    }

    /// No checks: a step outside a run.
    package static let none = StepChecks(appVersion: nil)
}
