extension MigrationManager {
    /// Freezes the manager's registrations and policies for one plan or run.
    func definition() -> ManagerDefinition {
        let snapshot = snapshot()
        var versions = snapshot.registrations.versions
        var dependencies = snapshot.registrations.dependencies
        var bodies = snapshot.registrations.bodies
        var transactions = snapshot.registrations.transactions
        var options = snapshot.registrations.options
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
        }
        let store = self.store
        let name = self.name
        let firstLaunch = snapshot.firstLaunch
        let hooks = snapshot.hooks
        // Decided once per manager rather than by a dynamic cast of the content at every step.
        let carriesContext = Store.Content.self is any MigrationContextCarrier.Type
        let labels = MigrationLabels(options)
        return ManagerDefinition(
            name: name, storeDescription: store.description, identity: store.identity,
            isRebuildable: store.isRebuildable, versions: versions, dependencies: dependencies,
            deferred: snapshot.registrations.hasDeferred ? bodies.map(\.isDeferred) : [],
            postDeploy: options.indices.filter { options[$0].isPostDeploy }, labels: labels,
            newerStorePolicy: snapshot.newerStore, latePolicy: snapshot.late, fingerprintPolicy: snapshot.fingerprint,
            hasHook: !hooks.isEmpty,
            readRecords: { [self] in try readStoreRecords() },
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
            resumable: snapshot.registrations.hasResumable ? bodies.map(\.isResumable) : [],
            perform: { [bodies, transactions, options, labels, newerStore = snapshot.newerStore, fingerprint = snapshot.fingerprint] step, source in
                let checks = StepChecks(
                    appVersion: source.run.appVersion, newerStorePolicy: newerStore, fingerprintPolicy: fingerprint)
                switch step {
                case let .migrate(migration), let .batches(migration):
                    let position = migration.position, version = migration.version
                    switch bodies[position] {
                    case .plain(let body):
                        return try StepExecutor.migrate(
                            version, of: name, in: store, source: source, carriesContext: carriesContext,
                            transaction: transactions[position], options: options[position], label: labels[position],
                            checks: checks
                        ) { content, _ in try body(&content) }
                    case .withContext(let body):
                        return try StepExecutor.migrate(
                            version, of: name, in: store, source: source, carriesContext: carriesContext,
                            transaction: transactions[position], options: options[position], label: labels[position],
                            checks: checks
                        ) { content, context in try body(&content, context()) }
                    case let .batched(batch, size, _):
                        return try StepExecutor.migrateInBatches(
                            version, of: name, in: store, source: source, carriesContext: carriesContext,
                            size: size, options: options[position], label: labels[position], checks: checks, batch)
                    }
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
}
