import Foundation

/// What a step did to its store.
package enum StepOutcome: Sendable, Hashable {
    /// The step ran and its record changed; `level` is the manager's level in the record it
    /// committed, which the report gives as the level after the run.
    case applied(level: Version?)
    /// The record, read again under the store's lock, showed the work done (by another process,
    /// or another run); nothing ran. `level` is the manager's level as that record gave it.
    case alreadyApplied(level: Version?)
    /// A resumable migration stopped between two batches (a launch budget, a pause that ended in
    /// cancellation, a cancelled run), its progress committed: the next run resumes it.
    case suspended(StepProgress?)
    /// A deferred migration, or one depending on it, left for the background.
    case deferred

    /// Whether the step ran and changed its record, whatever level it left.
    package var isApplied: Bool {
        if case .applied = self { return true }
        return false
    }
}

/// The one place that decides, for every kind of step, "already done? skip : do it and record
/// it". Each function runs inside one ``MigrationStore/transaction(_:_:)``, told which migration
/// runs and where waits are reported (``TransactionRequest``): the record it looks at
/// is read again under the store's lock, and the record it changes is committed with the
/// content, or not at all when anything throws. Stores only lock and commit.
package enum StepExecutor {
    /// Runs migration `version` of `manager` unless the record shows it applied, then adds it to
    /// the applied set with when it started and how long it took. The body gets a function that
    /// makes the step's ``MigrationContext`` (with the level read under the lock) on first use;
    /// content that carries a context (``MigrationContextCarrier``, when `carriesContext`) is
    /// given it for the length of the body.
    package static func migrate<Store: MigrationStore>(
        _ version: Version, of manager: String, in store: Store, source: StepSource = .standalone,
        carriesContext: Bool = false, transaction mode: TransactionMode = .transactional,
        options: MigrationOptions = MigrationOptions(), label: MigrationLabel = MigrationLabel(),
        refusingNewerThan appVersion: Version? = nil, _ body: (inout Store.Content, () -> MigrationContext) throws -> Void
    ) throws -> StepOutcome {
        let migration = MigrationReference(manager: manager, version: version, name: label.name)
        func step(_ records: inout [String: MigrationRecord], _ content: inout Store.Content) throws -> StepOutcome {
            // One look-up a step: the record is found once, by its index, and changed through
            // it below (hashing the manager's name four times a step showed in runs of many
            // small steps).
            let index = records.index(forKey: manager)
            let levelBefore: Version?
            if let index {
                let record = records.values[index]
                try refuseNewer(record, of: manager, in: store, than: appVersion)
                if record.isApplied(version) { return .alreadyApplied(level: record.level) }
                levelBefore = record.level
            } else {
                levelBefore = nil
            }
            let startedAt = Date()
            let start = ContinuousClock.now
            // Made only for a body or a content that asks for it: most steps never do, and an
            // allocation a step shows in runs of many small steps.
            var made: MigrationContext?
            func context() -> MigrationContext {
                if let made { return made }
                let context = MigrationContext(manager: manager, version: version, levelBefore: levelBefore, run: source.run, step: source.step)
                made = context
                return context
            }
            let carrier = carriesContext ? content as? any MigrationContextCarrier : nil
            carrier?.context = context()
            defer { carrier?.context = nil }
            try body(&content, context)
            let duration = (ContinuousClock.now - start).seconds
            // In place: a copy of the record would copy its whole applied set on every step. The
            // body changes the content, never the records, so the index is still the record's.
            guard let index else {
                var record = MigrationRecord()
                record.markApplied(version, at: startedAt, duration: duration, name: label.name, fingerprint: label.fingerprint)
                records[manager] = record
                return .applied(level: record.level)
            }
            records.values[index].markApplied(
                version, at: startedAt, duration: duration, name: label.name, fingerprint: label.fingerprint)
            return .applied(level: records.values[index].level)
        }
        if mode == .none, !store.runsStepsOutsideTransactions {
            throw MigrationError.transactionModeNotSupported(migration: migration, store: store.description)
        }
        let request = TransactionRequest(migration: migration, source: source, mode: mode, options: options)
        do {
            return try store.transaction(request, step)
        } catch let error as any MigrationAttributableError {
            throw error.attributed(to: migration)
        }
    }

    /// Runs the resumable migration `version` of `manager` batch by batch until it is applied,
    /// each batch in a transaction of its own that reads the record again under the store's lock
    /// (skipping if another process finished the migration), runs `batch` from the recorded
    /// cursor, and commits the batch's writes with the new progress, or, after the last batch,
    /// with the migration applied. Between batches, stops with ``StepOutcome/suspended(_:)``
    /// when the run says so (``MigrationRunControl/shouldStopBetweenBatches()``).
    package static func migrateInBatches<Store: MigrationStore>(
        _ version: Version, of manager: String, in store: Store, source: StepSource = .standalone,
        carriesContext: Bool = false, size: BatchSize, options: MigrationOptions = MigrationOptions(),
        label: MigrationLabel = MigrationLabel(), refusingNewerThan appVersion: Version? = nil, _ batch: (inout Store.Content, BatchRequest) throws -> BatchResult
    ) throws -> StepOutcome {
        let migration = MigrationReference(manager: manager, version: version, name: label.name)
        var limit = size.initialLimit
        var progress: StepProgress?
        var batches = 0
        while true {
            if batches > 0, source.run.shouldStopBetweenBatches() { return .suspended(progress) }
            let start = ContinuousClock.now
            let startedAt = Date()
            let request = TransactionRequest(migration: migration, source: source, isBatch: true, options: options)
            let outcome: BatchOutcome
            do {
                outcome = try store.transaction(request) { records, content -> BatchOutcome in
                    let record = records[manager]
                    if let record { try refuseNewer(record, of: manager, in: store, than: appVersion) }
                    if let record, record.isApplied(version) { return .alreadyApplied(record.level) }
                    let previous = record?.progress(of: version)
                    let context = MigrationContext(
                        manager: manager, version: version, levelBefore: record?.level, run: source.run, step: source.step)
                    let carrier = carriesContext ? content as? any MigrationContextCarrier : nil
                    carrier?.context = context
                    defer { carrier?.context = nil }
                    let result = try batch(
                        &content, BatchRequest(cursor: previous?.cursor, limit: limit, done: previous?.done ?? 0, total: previous?.total))
                    let seconds = (ContinuousClock.now - start).seconds
                    let elapsed = (previous?.elapsed ?? 0) + seconds
                    switch result {
                    case let .more(cursor, processed, total):
                        let next = StepProgress(
                            version: version, cursor: cursor, done: (previous?.done ?? 0) + processed,
                            total: total ?? previous?.total, batches: (previous?.batches ?? 0) + 1, elapsed: elapsed)
                        records[manager, default: MigrationRecord()].setProgress(next)
                        return .committed(next, processed: processed)
                    case .finished:
                        records[manager, default: MigrationRecord()].markApplied(
                            version, at: startedAt, duration: elapsed, name: label.name, fingerprint: label.fingerprint)
                        return .finished(records[manager]?.level)
                    }
                }
            } catch let error as any MigrationAttributableError {
                throw error.attributed(to: migration)
            }
            batches += 1
            switch outcome {
            case .alreadyApplied(let level):
                return batches == 1 ? .alreadyApplied(level: level) : .applied(level: level)
            case .finished(let level):
                return .applied(level: level)
            case let .committed(committed, processed):
                progress = committed
                source.run.reportBatch(committed, ofStep: source.step)
                if let fraction = committed.fractionDone { source.run.reportProgress(ofStep: source.step, fraction: fraction) }
                limit = size.nextLimit(after: limit, processed: processed, seconds: (ContinuousClock.now - start).seconds)
            }
        }
    }

    /// Records `version` as `manager`'s baseline mark, unless the manager already has a level
    /// (another process migrated it meanwhile, or the app adopted the library earlier).
    package static func baseline<Store: MigrationStore>(
        _ version: Version, of manager: String, in store: Store, source: StepSource = .standalone
    ) throws -> StepOutcome {
        try store.transaction(TransactionRequest(migration: nil, source: source)) { records, _ in
            var record = records[manager] ?? MigrationRecord()
            if let level = record.level { return .alreadyApplied(level: level) }
            record.baseline = version
            records[manager] = record
            return .applied(level: record.level)
        }
    }

    /// Throws the store's content away and forgets `manager`'s record, unless the record no
    /// longer shows a level past `appVersion`: then another process has reset (and perhaps
    /// migrated) the store already, and resetting again would lose its work.
    package static func reset<Store: MigrationStore>(
        _ manager: String, in store: Store, newerThan appVersion: Version, source: StepSource = .standalone
    ) throws -> StepOutcome {
        do {
            return try store.transaction(TransactionRequest(migration: nil, source: source)) { records, content in
                guard let level = records[manager]?.level, level.base > appVersion else {
                    return .alreadyApplied(level: records[manager]?.level)
                }
                try store.rebuild(&content)
                records[manager] = nil
                return .applied(level: nil)
            }
        } catch MigrationError.resetNotSupported(_, let description) {
            throw MigrationError.resetNotSupported(manager: manager, store: description)
        }
    }

    /// Runs `hook` once for app version `current` and records that version, so that of several
    /// processes launching together only one runs it. A hook that throws records nothing. Like a
    /// migration's step, it fails when the record shows the store past `appVersion` (the last step
    /// of an old replica's run must not report success on a store a newer one migrated).
    package static func appVersionChange<Store: MigrationStore>(
        to current: Version, of manager: String, in store: Store, source: StepSource = .standalone,
        refusingNewerThan appVersion: Version? = nil, _ hook: (_ previous: Version?, _ current: Version) throws -> Void
    ) throws -> StepOutcome {
        try store.transaction(TransactionRequest(migration: nil, source: source)) { records, _ in
            var record = records[manager] ?? MigrationRecord()
            try refuseNewer(record, of: manager, in: store, than: appVersion)
            // A newer app's launch recorded its version meanwhile: an older one never writes over it.
            if let recorded = record.appVersion, recorded >= current { return .alreadyApplied(level: record.level) }
            try hook(record.appVersion, current)
            record.appVersion = current
            records[manager] = record
            return .applied(level: record.level)
        }
    }

    /// Throws ``MigrationError/storeIsNewer(manager:store:level:appVersion:)`` when `record`,
    /// read under the store's lock, shows the store past `appVersion`: another process of a newer
    /// app migrated it after this run planned (an old replica of a rolling deploy). `nil`: the
    /// manager's newer-store policy lets it run.
    private static func refuseNewer<Store: MigrationStore>(
        _ record: MigrationRecord, of manager: String, in store: Store, than appVersion: Version?
    ) throws {
        guard let appVersion, let level = record.level, level.base > appVersion else { return }
        throw MigrationError.storeIsNewer(manager: manager, store: store.description, level: level, appVersion: appVersion)
    }

    /// Records `labels` (by version) as the names and fingerprints of `manager`'s applied
    /// migrations, accepting edits made since they ran; the store's content is not touched.
    /// Returns the versions whose record changed, ascending.
    package static func relabel<Store: MigrationStore>(
        _ labels: [Version: MigrationLabel], of manager: String, in store: Store
    ) throws -> [Version] {
        try store.transaction { records, _ in
            guard var record = records[manager] else { return [] }
            let changed = labels.keys.sorted().filter { version in
                record.relabel(version, name: labels[version]!.name, fingerprint: labels[version]!.fingerprint)
            }
            if !changed.isEmpty { records[manager] = record }
            return changed
        }
    }

    /// Forgets `manager`'s record; the store's content is not touched.
    package static func forget<Store: MigrationStore>(_ manager: String, in store: Store) throws {
        try store.transaction { records, _ in records[manager] = nil }
    }
}

/// What one batch's transaction did.
private enum BatchOutcome {
    case committed(StepProgress, processed: Int)
    case finished(Version?)
    case alreadyApplied(Version?)
}

/// The run and step a store's transaction works for: where its context reports progress and
/// its store reports waits. A reference and an index, so that passing it allocates nothing per
/// step (a closure capturing the step would).
package struct StepSource {
    package let run: any MigrationRunControl
    package let step: Int

    package init(run: any MigrationRunControl, step: Int) {
        self.run = run
        self.step = step
    }

    /// Steps run outside a coordinator's run (``MigrationManager/reset()``, tests).
    package static var standalone: StepSource { StepSource(run: StandaloneRun(), step: 0) }
}

/// An error a store throws without knowing which migration it was working for; the step
/// executor names the migration.
package protocol MigrationAttributableError: Error {
    /// The error, naming `migration` if it named none.
    func attributed(to migration: MigrationReference) -> any Error
}
