extension MigrationManager {
    /// Freezes the manager's registrations and policies for one plan or run.
    func definition() -> ManagerDefinition {
        let snapshot = snapshot()
        var versions = snapshot.registrations.versions
        var dependencies = snapshot.registrations.dependencies
        var bodies = snapshot.registrations.bodies
        var transactions = snapshot.registrations.transactions
        var options = snapshot.registrations.options
        var fingerprintTexts = snapshot.registrations.fingerprintTexts
        var registeredSquashes = snapshot.registrations.squashes
        if !snapshot.registrations.historySquashes.isEmpty, !versions.isEmpty {
            registeredSquashes += historySquashes(snapshot.registrations)
        }
        // Stable: by the start of the range, then registration order. Closures rather than key
        // paths here and below: in this generic type each key path is made at run time, on every
        // plan (Benchmarks/BENCHMARKS.md, issue 27). A lone squash (a creation from the declared
        // schema) is not sorted: the sort's generic code took a new store's plan 10 µs.
        let squashes = registeredSquashes.count < 2
            ? registeredSquashes
            : registeredSquashes.enumerated()
                .sorted { ($0.element.from, $0.offset) < ($1.element.from, $1.offset) }.map { $0.element }
        // A squash whose replaced migrations are gone stands in for them as a migration of its
        // own at the end of its range, so that the chain, dependencies and records see it there.
        var standsIn = [Bool](repeating: false, count: squashes.count)
        for (index, squash) in squashes.enumerated()
        where squash.from <= squash.through && !versions.contains(where: { squash.from <= $0 && $0 <= squash.through }) {
            standsIn[index] = true
            var standInOptions = squash.options
            standInOptions.fingerprintText = nil
            versions.append(squash.through)
            dependencies.append(squash.dependencies)
            bodies.append(.withContext(squash.body))
            transactions.append(.transactional)
            options.append(standInOptions)
            fingerprintTexts.append(nil)
        }
        // Apps usually register in version order; otherwise a sort that breaks ties by
        // registration order keeps duplicates in that order, so the graph reports them
        // deterministically.
        if versions.indices.dropFirst().contains(where: { versions[$0] < versions[$0 - 1] }) {
            let order = versions.indices.sorted { versions[$0] < versions[$1] || (versions[$0] == versions[$1] && $0 < $1) }
            versions = order.map { versions[$0] }
            dependencies = order.map { dependencies[$0] }
            bodies = order.map { bodies[$0] }
            transactions = order.map { transactions[$0] }
            options = order.map { options[$0] }
            fingerprintTexts = order.map { fingerprintTexts[$0] }
        }
        let squashed = squashes.indices.map { index in
            let squash = squashes[index]
            let recorded = squash.from <= squash.through
                ? MigrationGraph.partition(versions) { $0 >= squash.from }..<MigrationGraph.partition(versions) { $0 > squash.through }
                : 0..<0
            if !standsIn[index], let last = recorded.last { dependencies[last] += squash.dependencies }
            return SquashedMigration(
                from: squash.from, through: squash.through, recorded: recorded, originalsRemoved: standsIn[index],
                isPostDeploy: squash.options.isPostDeploy, name: squash.options.name, refusal: squash.refusal)
        }
        let squashBodies = squashes.map { $0.body }
        let squashOptions = squashes.map { $0.options }
        let store = self.store
        let name = self.name
        let firstLaunch = snapshot.firstLaunch
        let hooks = snapshot.hooks
        // Decided once per manager rather than by a dynamic cast of the content at every step.
        let carriesContext = Store.Content.self is any MigrationContextCarrier.Type
        let labels = MigrationLabels(options, fingerprintTexts: fingerprintTexts)
        return ManagerDefinition(
            name: name, storeDescription: store.description, identity: store.identity,
            isRebuildable: store.isRebuildable, versions: versions, dependencies: dependencies,
            deferred: snapshot.registrations.hasDeferred ? bodies.map { $0.isDeferred } : [],
            postDeploy: options.indices.filter { options[$0].isPostDeploy }, labels: labels,
            newerStorePolicy: snapshot.newerStore, latePolicy: snapshot.late, fingerprintPolicy: snapshot.fingerprint,
            hasHook: !hooks.isEmpty,
            readRecords: { [self] resources in try readStoreRecords(reusing: resources) },
            storeExists: { store.exists },
            decideFirstLaunch: {
                switch firstLaunch {
                case .runAll: return .runAll
                case .baseline: return .baseline
                case .decide(let decide):
                    do {
                        return try decide(store)
                    } catch {
                        throw MigrationError.firstLaunchDecisionFailed(
                            manager: name, store: store.description, reason: "\(error)")
                    }
                }
            },
            resumable: snapshot.registrations.hasResumable ? bodies.map { $0.isResumable } : [],
            squashes: squashed,
            perform: { [bodies, transactions, options, labels, versions, newerStore = snapshot.newerStore, fingerprint = snapshot.fingerprint] step, source in
                let checks = StepChecks(
                    appVersion: source.run.appVersion, newerStorePolicy: newerStore, fingerprintPolicy: fingerprint)
                switch step {
                case let .migrate(migration), let .batches(migration):
                    let position = migration.position, version = migration.version
                    let run: (inout Store.Content, () -> MigrationContext) throws -> Void
                    switch bodies[position] {
                    case .plain(let body): run = { content, _ in try body(&content) }
                    case .withContext(let body): run = { content, context in try body(&content, context()) }
                    case let .sql(sql, execute): run = { content, _ in try execute(content, sql) }
                    case let .batched(batch, size, _):
                        return try StepExecutor.migrateInBatches(
                            version, of: name, in: store, source: source, carriesContext: carriesContext,
                            size: size, options: options[position], label: labels[position], checks: checks, batch)
                    }
                    return try StepExecutor.migrate(
                        version, of: name, in: store, source: source, carriesContext: carriesContext,
                        transaction: transactions[position], options: options[position], label: labels[position],
                        checks: checks, run)
                case let .squash(squash):
                    let records = SquashRecords(
                        range: squash.range, originalsRemoved: squashed[squash.index].originalsRemoved,
                        versions: Array(versions[squash.recorded]), labels: labels, positions: squash.recorded)
                    let label = MigrationLabel(name: squashed[squash.index].name)
                    let body = squashBodies[squash.index]
                    return try StepExecutor.migrate(
                        squash.version, of: name, in: store, source: source, carriesContext: carriesContext,
                        options: squashOptions[squash.index], label: label, checks: checks, squash: records
                    ) { content, context in try body(&content, context()) }
                case let .baseline(version):
                    return try StepExecutor.baseline(version, of: name, in: store, source: source, checks: checks)
                case let .reset(appVersion):
                    return try StepExecutor.reset(name, in: store, newerThan: appVersion, source: source)
                case let .appVersionChange(current):
                    return try StepExecutor.appVersionChange(to: current, of: name, in: store, source: source, checks: checks) {
                        previous, current in
                        for hook in hooks { try hook(previous, current) }
                    }
                }
            }
        )
    }

    /// The squashes of the whole history, each over the migrations registered now, with the
    /// body its registration makes of them, or the refusal it throws.
    private func historySquashes(_ registrations: Registrations) -> [RegisteredSquash] {
        // Apps usually register in version order, and the history is then the registrations as
        // they are; nor is any body read for its kind when none is resumable.
        let versions = registrations.versions
        let order = versions.indices.dropFirst().contains(where: { versions[$0] < versions[$0 - 1] })
            ? versions.indices.sorted { versions[$0] < versions[$1] }
            : nil
        let resumable = registrations.hasResumable
            ? (order ?? Array(versions.indices)).map { registrations.bodies[$0].isResumable }
            : [Bool](repeating: false, count: versions.count)
        let history = SquashedHistory(
            manager: name, store: store.description, versions: order.map { $0.map { versions[$0] } } ?? versions,
            options: order.map { $0.map { registrations.options[$0] } } ?? registrations.options, resumable: resumable)
        return registrations.historySquashes.map { squash in
            let from = history.versions[0], through = history.versions[history.versions.count - 1]
            do {
                return RegisteredSquash(
                    from: from, through: through, dependencies: [], options: squash.options, body: try squash.resolve(history))
            } catch {
                // Never runs: the plan throws the refusal first.
                return RegisteredSquash(
                    from: from, through: through, dependencies: [], options: squash.options, body: { _, _ in throw error },
                    refusal: error)
            }
        }
    }
}
