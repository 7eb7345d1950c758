import Foundation

/// The one place that decides, for every kind of step, "already done? skip : do it and record
/// it". Each function runs inside one ``MigrationStore/transaction(_:_:)``, told which migration
/// runs and where waits are reported (``TransactionRequest``): the record it looks at
/// is read again under the store's lock and passed through ``admit(_:_:record:checks:fingerprint:manager:store:)``,
/// the rules table every kind obeys, and the record it changes is committed with the content,
/// or not at all when anything throws. Stores only lock and commit.
package enum StepExecutor {
    /// Applies the rules of `kind` (``StepRules``) to `record`, read under the store's lock, for
    /// a step about `version` (the migration's, the baseline mark, the app version of a reset or
    /// a hook). Returns the outcome that ends the step there, or `nil` when its work is to be
    /// done; throws when a policy refuses it.
    static func admit(
        _ kind: Step.Kind, _ version: Version, record: MigrationRecord?, checks: StepChecks,
        fingerprint: MigrationFingerprint? = nil, squash: SquashRecords? = nil, manager: String,
        store: @autoclosure () -> String
    ) throws -> Outcome? {
        let rules = StepRules.of(kind)
        if rules.appliesNewerStorePolicy, let appVersion = checks.appVersion, let level = record?.level, level.base > appVersion {
            switch checks.newerStorePolicy {
            case .ignore: return .alreadyApplied(level: level)
            case .fail, .reset:
                throw MigrationError.storeIsNewer(manager: manager, store: store(), level: level, appVersion: appVersion)
            }
        }
        if rules.refusesRangePartWay, let squash, SquashPath.isPartWay(squash.range, in: record) {
            throw MigrationError.squashedRangePartWay(
                manager: manager, store: store(), squash: version, applied: SquashPath.progress(in: squash.range, of: record).applied,
                originalsRegistered: !squash.originalsRemoved)
        }
        if rules.comparesProgressFingerprint, checks.fingerprintPolicy == .fail, let fingerprint,
           let progress = record?.progress(of: version), let recorded = progress.fingerprint,
           fingerprint.differs(fromRecorded: recorded) {
            throw MigrationError.fingerprintsChanged(manager: manager, store: store(), changes: [FingerprintChange(
                migration: MigrationReference(manager: manager, version: version), name: nil, recorded: recorded,
                current: fingerprint, isInProgress: true)])
        }
        return rules.done.holds(in: record, for: version) ? .alreadyApplied(level: record?.level) : nil
    }

    /// Runs migration `version` of `manager` unless the record shows it applied, then adds it to
    /// the applied set with when it started and how long it took. The body gets a function that
    /// makes the step's ``MigrationContext`` (with the level read under the lock) on first use;
    /// content that carries a context (``MigrationContextCarrier``, when `carriesContext`) is
    /// given it for the length of the body. With `squash`, the step is a squashed migration's: it
    /// runs only on a store with none of the range applied, and records every version the squash
    /// records in the same transaction.
    package static func migrate<Store: MigrationStore>(
        _ version: Version, of manager: String, in store: Store, source: StepSource = .standalone,
        carriesContext: Bool = false, transaction mode: TransactionMode = .transactional,
        options: MigrationOptions = MigrationOptions(), label: MigrationLabel = MigrationLabel(),
        checks: StepChecks = .none, squash: SquashRecords? = nil,
        _ body: (inout Store.Content, () -> MigrationContext) throws -> Void
    ) throws -> Outcome {
        let migration = MigrationReference(manager: manager, version: version, name: label.name)
        func step(_ records: inout [String: MigrationRecord], _ content: inout Store.Content) throws -> Outcome {
            // One look-up a step: the record is found once, by its index, and changed through
            // it below, rather than hashing the manager's name again.
            let index = records.index(forKey: manager)
            let record = index.map { records.values[$0] }
            if let done = try admit(
                squash == nil ? .migrate : .squash, version, record: record, checks: checks, squash: squash, manager: manager,
                store: store.description)
            {
                return done
            }
            let levelBefore = record?.level
            let startedAt = Date()
            let start = ContinuousClock.now
            // Made only for a body or a content that asks for it: most steps never do, and it is
            // an allocation.
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
            if let carrier = Store.Content.self as? any StepNotesCarrier.Type {
                for note in carrier.takeNotes(from: &content) { context().note(note) }
            }
            let duration = (ContinuousClock.now - start).seconds
            // In place: a copy of the record would copy its whole applied set on every step. The
            // body changes the content, never the records, so the index is still the record's.
            func markApplied(in record: inout MigrationRecord) {
                guard let squash else {
                    record.markApplied(version, at: startedAt, duration: duration, name: label.name, fingerprint: label.fingerprint)
                    return
                }
                // The whole duration goes to the squash's own version, so that a history's sum
                // stays the time spent.
                squash.labels.forEach(in: squash.positions) { offset, replacedLabel in
                    let replaced = squash.versions[offset]
                    record.markApplied(
                        replaced, at: startedAt, duration: replaced == version ? duration : 0, name: replacedLabel.name,
                        fingerprint: replacedLabel.fingerprint)
                }
            }
            guard let index else {
                var record = MigrationRecord()
                markApplied(in: &record)
                records[manager] = record
                return .applied(level: record.level)
            }
            markApplied(in: &records.values[index])
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
    /// with the migration applied. Between batches, stops short (``Outcome/stoppedShort(_:)``)
    /// when the run says so (``MigrationRunControl/shouldStopBetweenBatches()``).
    package static func migrateInBatches<Store: MigrationStore>(
        _ version: Version, of manager: String, in store: Store, source: StepSource = .standalone,
        carriesContext: Bool = false, size: BatchSize, options: MigrationOptions = MigrationOptions(),
        label: MigrationLabel = MigrationLabel(), checks: StepChecks = .none,
        _ batch: (inout Store.Content, BatchRequest) throws -> BatchResult
    ) throws -> Outcome {
        let migration = MigrationReference(manager: manager, version: version, name: label.name)
        // Decided in the first batch's transaction, from the progress read there.
        var limit: Int?
        var progress: StepProgress?
        var batches = 0
        while true {
            if batches > 0, let progress, source.run.shouldStopBetweenBatches() { return .stoppedShort(.betweenBatches(progress)) }
            let start = ContinuousClock.now
            let startedAt = Date()
            let request = TransactionRequest(migration: migration, source: source, isBatch: true, options: options)
            let outcome: BatchCommit
            do {
                outcome = try store.transaction(request) { records, content -> BatchCommit in
                    let record = records[manager]
                    if let done = try admit(
                        .batches, version, record: record, checks: checks, fingerprint: label.fingerprint, manager: manager,
                        store: store.description)
                    {
                        return .ended(done)
                    }
                    let previous = record?.progress(of: version)
                    let batchLimit = limit ?? size.firstLimit(learnt: previous?.batchSize)
                    let context = MigrationContext(
                        manager: manager, version: version, levelBefore: record?.level, run: source.run, step: source.step)
                    let carrier = carriesContext ? content as? any MigrationContextCarrier : nil
                    carrier?.context = context
                    defer { carrier?.context = nil }
                    let result = try batch(
                        &content, BatchRequest(cursor: previous?.cursor, limit: batchLimit, done: previous?.done ?? 0, total: previous?.total))
                    let seconds = (ContinuousClock.now - start).seconds
                    let elapsed = (previous?.elapsed ?? 0) + seconds
                    switch result {
                    case let .more(cursor, processed, total):
                        if let previous, cursor == previous.cursor {
                            throw MigrationError.batchDidNotAdvance(migration: migration, store: store.description, cursor: cursor)
                        }
                        let next = StepProgress(
                            version: version, cursor: cursor, done: (previous?.done ?? 0) + processed,
                            total: total ?? previous?.total, batches: (previous?.batches ?? 0) + 1, elapsed: elapsed,
                            fingerprint: label.fingerprint,
                            batchSize: size.learntLimit(after: batchLimit, processed: processed, seconds: seconds))
                        records[manager, default: MigrationRecord()].setProgress(next)
                        return .committed(next)
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
            case .ended(let done):
                // Another process finished the migration after this run's first batches.
                if batches == 1 { return done }
                if case .alreadyApplied(let level) = done { return .applied(level: level) }
                return done
            case .finished(let level):
                return .applied(level: level)
            case .committed(let committed):
                progress = committed
                limit = committed.batchSize ?? size.firstLimit(learnt: nil)
                source.run.reportBatch(committed, ofStep: source.step)
                if let fraction = committed.fractionDone { source.run.reportProgress(ofStep: source.step, fraction: fraction) }
            }
        }
    }

    /// Records `version` as `manager`'s baseline mark, unless the manager already has a level
    /// (another process migrated it meanwhile, or the app adopted the library earlier).
    package static func baseline<Store: MigrationStore>(
        _ version: Version, of manager: String, in store: Store, source: StepSource = .standalone, checks: StepChecks = .none
    ) throws -> Outcome {
        try store.transaction(TransactionRequest(migration: nil, source: source)) { records, _ in
            if let done = try admit(.baseline, version, record: records[manager], checks: checks, manager: manager, store: store.description) {
                return done
            }
            var record = records[manager] ?? MigrationRecord()
            record.setBaseline(version)
            records[manager] = record
            return .applied(level: record.level)
        }
    }

    /// Throws the store's content away and forgets `manager`'s record, unless the record no
    /// longer shows a level past `appVersion`: then another process has reset (and perhaps
    /// migrated) the store already, and resetting again would lose its work.
    package static func reset<Store: MigrationStore>(
        _ manager: String, in store: Store, newerThan appVersion: Version, source: StepSource = .standalone
    ) throws -> Outcome {
        do {
            return try store.transaction(TransactionRequest(migration: nil, source: source)) { records, content in
                if let done = try admit(
                    .reset, appVersion, record: records[manager], checks: .none, manager: manager, store: store.description)
                {
                    return done
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
    /// processes launching together only one runs it. It runs on every change of the app
    /// version, a downgrade too (an older app launched on a store whose level it can still read):
    /// `previous` is the version recorded before. A hook that throws records nothing. Like every
    /// step, it applies the newer-store policy when the record shows the store past the app (the
    /// last step of an old replica's run must not report success on a store a newer one migrated).
    package static func appVersionChange<Store: MigrationStore>(
        to current: Version, of manager: String, in store: Store, source: StepSource = .standalone,
        checks: StepChecks = .none, _ hook: (_ previous: Version?, _ current: Version) throws -> Void
    ) throws -> Outcome {
        try store.transaction(TransactionRequest(migration: nil, source: source)) { records, _ in
            if let done = try admit(
                .appVersionChange, current, record: records[manager], checks: checks, manager: manager, store: store.description)
            {
                return done
            }
            var record = records[manager] ?? MigrationRecord()
            try hook(record.appVersion, current)
            record.appVersion = current
            records[manager] = record
            return .applied(level: record.level)
        }
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
private enum BatchCommit {
    case committed(StepProgress)
    case finished(Version?)
    /// The rules ended the step before the batch ran (``StepExecutor/admit(_:_:record:checks:fingerprint:manager:store:)``).
    case ended(Outcome)
}

/// An error a store throws without knowing which migration it was working for; the step
/// executor names the migration.
package protocol MigrationAttributableError: Error {
    /// The error, naming `migration` if it named none.
    func attributed(to migration: MigrationReference) -> any Error
}
