import StoreMigrations

/// Makes a diverging scenario minimal, greedily: removes launches, interleavings, managers,
/// migrations, dependencies and options, and lowers numbers, keeping each change while the
/// same divergence persists, until no change keeps it.
enum Shrinker {
    /// The smallest scenario found from `scenario` for which `diverges` still holds.
    static func shrink(_ scenario: ModelScenario, while diverges: (ModelScenario) -> Bool) -> ModelScenario {
        var current = scenario
        var improved = true
        while improved {
            improved = false
            for candidate in candidates(of: current) where candidate != current && diverges(candidate) {
                current = candidate
                improved = true
                break
            }
        }
        return current
    }

    /// Smaller variants of `scenario`, the largest cuts first.
    static func candidates(of scenario: ModelScenario) -> [ModelScenario] {
        var result: [ModelScenario] = []
        for index in scenario.launches.indices {
            var smaller = scenario
            smaller.launches.remove(at: index)
            if !smaller.launches.isEmpty { result.append(smaller) }
        }
        for index in scenario.managers.indices where scenario.managers.count > 1 {
            result.append(removingManager(index, from: scenario))
        }
        for (manager, spec) in scenario.managers.enumerated() {
            for position in spec.migrations.indices where spec.migrations.count > 1 {
                result.append(removingMigration(MigrationKey(manager: manager, version: spec.migrations[position].version), from: scenario))
            }
        }
        if scenario.storeKind != .inMemory {
            var simpler = scenario
            simpler.storeKind = .inMemory
            result.append(simpler)
        }
        for index in scenario.launches.indices {
            result += launchVariants(scenario.launches[index]).map { launch in
                var simpler = scenario
                simpler.launches[index] = launch
                return simpler
            }
            for (position, inner) in scenario.launches[index].interleaved.enumerated() {
                result += launchVariants(inner).map { launch in
                    var simpler = scenario
                    simpler.launches[index].interleaved[position] = launch
                    return simpler
                }
            }
        }
        for (manager, spec) in scenario.managers.enumerated() {
            for variant in managerVariants(spec) {
                var simpler = scenario
                simpler.managers[manager] = variant
                result.append(simpler)
            }
        }
        return result
    }

    private static func launchVariants(_ launch: Launch) -> [Launch] {
        var variants: [Launch] = []
        func variant(_ change: (inout Launch) -> Void) {
            var copy = launch
            change(&copy)
            if copy != launch { variants.append(copy) }
        }
        variant { $0.interleaved = [] }
        variant { $0.kind = .launch(zeroBudget: false) }
        variant { $0.postDeploy = false }
        variant { $0.registersAhead = false }
        variant { $0.dependentsOfDeferred = .wait }
        for key in launch.edited { variant { $0.edited.remove(key) } }
        for key in launch.failures.keys { variant { $0.failures[key] = nil } }
        for (key, unit) in launch.failures where unit > 0 { variant { $0.failures[key] = unit - 1 } }
        for key in launch.stuck.keys { variant { $0.stuck[key] = nil } }
        for manager in launch.failingHooks { variant { $0.failingHooks.remove(manager) } }
        for manager in launch.baselineCalls.keys { variant { $0.baselineCalls[manager] = nil } }
        if let lower = ScenarioGenerator.appVersions.last(where: { $0 < launch.appVersion }) { variant { $0.appVersion = lower } }
        return variants
    }

    private static func managerVariants(_ spec: ManagerSpec) -> [ManagerSpec] {
        var variants: [ManagerSpec] = []
        func variant(_ change: (inout ManagerSpec) -> Void) {
            var copy = spec
            change(&copy)
            if copy != spec { variants.append(copy) }
        }
        variant { $0.hasHook = false }
        variant { $0.firstLaunch = .runAll }
        variant { $0.newerStore = .fail }
        variant { $0.late = .run }
        variant { $0.fingerprint = .warn }
        for position in spec.migrations.indices {
            let migration = spec.migrations[position]
            variant { $0.migrations[position].dependsOn = [] }
            for dependency in migration.dependsOn.indices.reversed() {
                variant { $0.migrations[position].dependsOn.remove(at: dependency) }
            }
            variant { $0.migrations[position].postDeploy = false }
            variant { $0.migrations[position].fingerprinted = false }
            variant { $0.migrations[position].introducedAt = 0 }
            if case let .resumable(units, batch, deferred) = migration.body {
                variant { $0.migrations[position].body = .plain }
                variant { $0.migrations[position].body = .resumable(units: units, batch: batch, deferred: false) }
                if units > 1 { variant { $0.migrations[position].body = .resumable(units: units - 1, batch: batch, deferred: deferred) } }
                if batch > 1 { variant { $0.migrations[position].body = .resumable(units: units, batch: batch - 1, deferred: deferred) } }
            }
        }
        return variants
    }

    /// `scenario` without manager `removed`: its migrations, the dependencies on them, and
    /// everything launches say of it; later managers move down one index.
    static func removingManager(_ removed: Int, from scenario: ModelScenario) -> ModelScenario {
        var result = scenario
        result.managers.remove(at: removed)
        func renumber(_ key: MigrationKey) -> MigrationKey? {
            key.manager == removed ? nil : MigrationKey(manager: key.manager > removed ? key.manager - 1 : key.manager, version: key.version)
        }
        for manager in result.managers.indices {
            for position in result.managers[manager].migrations.indices {
                result.managers[manager].migrations[position].dependsOn = result.managers[manager].migrations[position].dependsOn.compactMap {
                    renumber(MigrationKey(manager: $0.manager, version: $0.version)).map { Dependency(manager: $0.manager, version: $0.version) }
                }
            }
        }
        func fix(_ launch: Launch) -> Launch {
            var launch = launch
            launch.edited = Set(launch.edited.compactMap(renumber))
            launch.failures = Dictionary(uniqueKeysWithValues: launch.failures.compactMap { key, value in renumber(key).map { ($0, value) } })
            launch.stuck = Dictionary(uniqueKeysWithValues: launch.stuck.compactMap { key, value in renumber(key).map { ($0, value) } })
            launch.failingHooks = Set(launch.failingHooks.compactMap { $0 == removed ? nil : ($0 > removed ? $0 - 1 : $0) })
            launch.baselineCalls = Dictionary(uniqueKeysWithValues: launch.baselineCalls.compactMap { manager, version in
                manager == removed ? nil : (manager > removed ? manager - 1 : manager, version)
            })
            launch.interleaved = launch.interleaved.map(fix)
            return launch
        }
        result.launches = result.launches.map(fix)
        return result
    }

    /// `scenario` without migration `removed`, the dependencies on it, and what launches say of it.
    static func removingMigration(_ removed: MigrationKey, from scenario: ModelScenario) -> ModelScenario {
        var result = scenario
        result.managers[removed.manager].migrations.removeAll { $0.version == removed.version }
        for manager in result.managers.indices {
            for position in result.managers[manager].migrations.indices {
                result.managers[manager].migrations[position].dependsOn.removeAll {
                    $0.manager == removed.manager && $0.version == removed.version
                }
            }
        }
        func fix(_ launch: Launch) -> Launch {
            var launch = launch
            launch.edited.remove(removed)
            launch.failures[removed] = nil
            launch.stuck[removed] = nil
            launch.interleaved = launch.interleaved.map(fix)
            return launch
        }
        result.launches = result.launches.map(fix)
        return result
    }
}
