import StoreMigrations

/// SplitMix64: a seed gives the same numbers on every platform and release, so that a printed
/// seed replays its scenario.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Whether an event of probability `percent` in 100 happens.
    mutating func chance(_ percent: Int) -> Bool { Int(next() % 100) < percent }

    mutating func int(_ range: ClosedRange<Int>) -> Int { range.lowerBound + Int(next() % UInt64(range.count)) }

    mutating func pick<T>(_ values: [T]) -> T { values[int(0...(values.count - 1))] }
}

/// Makes scenarios across every feature and their combinations from a seed: several managers
/// with cross-store dependencies; plain, resumable and deferred migrations, post-deploy ones,
/// fingerprinted ones and late ones; every policy; launches that upgrade, downgrade, interleave
/// two app versions at the lock, stop resumable steps with a zero budget or a failing batch and
/// resume them with and without edits, run the deferred work, call `baseline(at:)`.
enum ScenarioGenerator {
    static let versionPool: [Version] = ["1", "1.1", "1.1-1", "1.2", "2", "2-1", "2.1", "3", "3-1", "3.1", "4"]
    static let appVersions: [Version] = ["1", "2", "3", "4"]

    static func scenario(seed: UInt64) -> ModelScenario {
        var random = SeededGenerator(seed: seed)
        let launchCount = random.int(1...5)
        let managerCount = random.pick([1, 2, 2, 3, 3])
        var managers: [ManagerSpec] = []
        for index in 0..<managerCount {
            var versions = versionPool.filter { _ in random.chance(35) }
            if versions.isEmpty { versions = [random.pick(versionPool)] }
            var migrations: [MigrationSpec] = []
            for version in versions {
                var migration = MigrationSpec(version: version)
                if random.chance(30) {
                    migration.body = .resumable(units: random.int(1...5), batch: random.int(1...3), deferred: random.chance(30))
                }
                migration.postDeploy = random.chance(12)
                migration.fingerprinted = random.chance(40)
                if launchCount > 1, random.chance(15) { migration.introducedAt = random.int(1...(launchCount - 1)) }
                // Dependencies on earlier managers only, at or below the migration's version and
                // registered as early as it: the graph is valid at every launch.
                for other in 0..<index where random.chance(25) {
                    let candidates = managers[other].migrations.filter {
                        $0.version <= version && $0.introducedAt <= migration.introducedAt
                    }
                    if !candidates.isEmpty {
                        migration.dependsOn.append(Dependency(manager: other, version: random.pick(candidates).version))
                    }
                }
                migrations.append(migration)
            }
            let squash = random.chance(20) ? squash(of: migrations, launchCount: launchCount, random: &random) : nil
            managers.append(ManagerSpec(
                migrations: migrations,
                firstLaunch: firstLaunch(versions: versions, squash: squash, random: &random),
                newerStore: random.chance(60) ? .fail : .ignore,
                late: random.pick([.run, .run, .run, .fail, .ignore]),
                fingerprint: random.pick([.warn, .warn, .fail, .ignore]),
                hasHook: random.chance(35),
                squash: squash))
        }
        var app = random.pick(appVersions)
        var launches: [Launch] = []
        for _ in 0..<launchCount {
            // Mostly upgrades and relaunches; a downgrade now and then.
            if random.chance(60) {
                app = appVersions.filter { $0 >= app }.randomElement(using: &random)!
            } else if random.chance(40) {
                app = random.pick(appVersions)
            }
            var launch = launch(app: app, managers: managers, random: &random)
            if random.chance(15) {
                launch.interleaved = [self.launch(app: random.pick(appVersions), managers: managers, random: &random)]
            }
            launches.append(launch)
        }
        let kind: ModelScenario.StoreKind
        switch random.int(0...19) {
        case 0, 1: kind = .preferences
        case 2: kind = .userDefaults
        case 3, 4: kind = .sqlite
        default: kind = .inMemory
        }
        return ModelScenario(managers: managers, launches: launches, storeKind: kind)
    }

    /// A first launch's decision. Adoptions are often at one of the manager's own versions, and
    /// then often inside its squashed range, where the planner must refuse a store part-way
    /// through a range whose originals are gone.
    private static func firstLaunch(versions: [Version], squash: SquashSpec?, random: inout SeededGenerator) -> FirstLaunchDecision {
        if random.chance(25) { return .baseline }
        guard random.chance(20) else { return .runAll }
        let inside = versions.filter { version in squash.map { $0.from <= version && version < $0.through } ?? false }
        if !inside.isEmpty, random.chance(50) { return .adopt(at: random.pick(inside)) }
        return .adopt(at: random.pick(random.chance(50) ? versions : versionPool))
    }

    /// A squash of a run of consecutive migrations registered from the first launch (deferred
    /// and resumable ones among them), none post-deploy: the model does not yet hold a squash
    /// behind a post-deploy migration it replaces, as the planner does. Its originals are
    /// removed now and then: from a later launch, or from the first, the fresh install of a
    /// release that ships the squash alone.
    private static func squash(of migrations: [MigrationSpec], launchCount: Int, random: inout SeededGenerator) -> SquashSpec? {
        let sorted = migrations.sorted { $0.version < $1.version }
        let start = random.int(0...(sorted.count - 1))
        var end = start
        while end + 1 < sorted.count, random.chance(70) { end += 1 }
        let run = sorted[start...end]
        guard run.allSatisfy({ $0.introducedAt == 0 && !$0.postDeploy }) else { return nil }
        let removedAt = random.chance(40) ? random.int(0...(launchCount - 1)) : nil
        return SquashSpec(from: run.first!.version, through: run.last!.version, originalsRemovedAt: removedAt)
    }

    private static func launch(app: Version, managers: [ManagerSpec], random: inout SeededGenerator) -> Launch {
        var launch = Launch(appVersion: app)
        if random.chance(15) {
            launch.kind = .background
        } else {
            launch.kind = .launch(zeroBudget: random.chance(25))
        }
        launch.postDeploy = random.chance(25)
        launch.registersAhead = random.chance(15)
        launch.dependentsOfDeferred = random.chance(30) ? .finishInline : .wait
        for (index, manager) in managers.enumerated() {
            for migration in manager.migrations {
                let key = MigrationKey(manager: index, version: migration.version)
                if migration.fingerprinted, random.chance(15) { launch.edited.insert(key) }
                if random.chance(5) {
                    guard case let .resumable(units, _, _) = migration.body else {
                        launch.failures[key] = 0
                        continue
                    }
                    launch.failures[key] = random.int(0...(units - 1))
                }
                if case let .resumable(units, _, _) = migration.body, units > 1, random.chance(3) {
                    launch.stuck[key] = random.int(1...(units - 1))
                }
            }
            if manager.hasHook, random.chance(8) { launch.failingHooks.insert(index) }
            if random.chance(8) { launch.baselineCalls[index] = random.pick(versionPool) }
        }
        return launch
    }
}
