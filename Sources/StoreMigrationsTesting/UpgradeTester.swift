import Foundation
import StoreMigrations

/// Tests an app's upgrades across all of its stores: captures fixtures of the stores as they
/// stood after a version, seeds stores at a version, and checks that each fixture, upgraded by
/// the current coordinator, ends where a fresh install does and keeps the app's data invariants.
///
/// It depends on neither XCTest nor Swift Testing: ``check(_:)`` throws an
/// ``UpgradeCheckFailure`` whose description is a diff naming store, table or key, and version.
///
/// ```swift
/// import StoreMigrationsTesting
/// import StoreMigrationsSQLiteTesting
///
/// let tester = UpgradeTester(kinds: [.sqlite]) { location in
///     try NotesApp.coordinator(
///         preferences: location.url("Preferences.json"), database: location.url("Notes.sqlite"))
/// }
/// for version in ["1.0", "1.1", "1.2"] {
///     try tester.check(UpgradeFixture(folder: fixtures.appendingPathComponent("notes-\(version)")))
/// }
/// ```
///
/// The factory builds the app's coordinator, with every store under the ``StoreLocation`` it is
/// given; the tester calls it for each copy it makes (the restored fixture, the fresh install),
/// so it must register the same managers and migrations every time.
public struct UpgradeTester: Sendable {
    /// Builds the app's coordinator with its stores at a location.
    public typealias CoordinatorFactory = @Sendable (StoreLocation) throws -> MigrationCoordinator

    /// The kinds of stores the tester captures and restores: those given, then preferences
    /// files, `UserDefaults` suites and cache directories.
    public let kinds: [any StoreFixtureKind]
    /// The app's data invariants, checked by ``check(_:)`` after every upgrade.
    public var invariants: [DataInvariant] = []
    /// Where the tester makes its locations; each is removed when the tester is done with it.
    public var temporaryDirectory: URL
    private let makeCoordinator: CoordinatorFactory

    /// A tester of the coordinator `coordinator` builds, knowing the store kinds `kinds` besides
    /// the built-in ones.
    public init(kinds: [any StoreFixtureKind] = [], coordinator: @escaping CoordinatorFactory) {
        self.kinds = kinds + [PreferencesFileKind(), UserDefaultsKind(), CacheDirectoryKind()]
        self.temporaryDirectory = FileManager.default.temporaryDirectory
        self.makeCoordinator = coordinator
    }

    // MARK: Locations

    /// A new, empty location, for stores a test writes itself (an old version's stores, made
    /// the way that version made them) before capturing them.
    public func makeLocation() throws -> StoreLocation {
        try StoreLocation.temporary(in: temporaryDirectory.appendingPathComponent("store-migrations-upgrades", isDirectory: true))
    }

    /// Removes `location`: its folder, and what its stores keep elsewhere (suites, schemas).
    public func discard(_ location: StoreLocation) throws {
        try discard(location, stores: CoordinatorStores(try makeCoordinator(location)))
    }

    private func discard(_ location: StoreLocation, stores: CoordinatorStores) throws {
        for group in stores.groups { try kind(for: group)?.discard(group.store) }
        if FileManager.default.fileExists(atPath: location.directory.path) {
            try FileManager.default.removeItem(at: location.directory)
        }
    }

    // MARK: Fixtures

    /// Captures every store of the coordinator at `location` into `folder` (created, or emptied
    /// first) as a fixture of `appVersion`; stores that do not exist there are left out.
    ///
    /// ```swift
    /// let location = try tester.makeLocation()
    /// try LegacyApp(directory: location.directory).writeStores()       // the 1.0 app's own way
    /// try tester.capture(location, appVersion: "1.0", into: fixtures.appendingPathComponent("notes-1.0"))
    /// ```
    @discardableResult
    public func capture(_ location: StoreLocation, appVersion: Version, into folder: URL) throws -> UpgradeFixture {
        try capture(CoordinatorStores(try makeCoordinator(location)), appVersion: appVersion, into: folder)
    }

    /// Captures `stores`, which may live in memory only: seeding captures the coordinator it
    /// seeded, not a new one.
    private func capture(_ stores: CoordinatorStores, appVersion: Version, into folder: URL) throws -> UpgradeFixture {
        let files = FileManager.default
        if files.fileExists(atPath: folder.path) { try files.removeItem(at: folder) }
        try files.createDirectory(at: folder, withIntermediateDirectories: true)
        var captured: [UpgradeFixture.Store] = []
        for group in stores.groups {
            let kind = try requiredKind(for: group)
            let storeFolder = folder.appendingPathComponent(group.names[0], isDirectory: true)
            try files.createDirectory(at: storeFolder, withIntermediateDirectories: true)
            if try kind.capture(group.store, into: storeFolder) {
                captured.append(UpgradeFixture.Store(managers: group.names, kind: kind.name))
            } else {
                try files.removeItem(at: storeFolder)
            }
        }
        let fixture = UpgradeFixture(folder: folder, appVersion: appVersion, stores: captured)
        try fixture.writeManifest()
        return fixture
    }

    /// Restores `fixture` into a new location and returns it with its coordinator, not run: for
    /// a test that goes its own way from there. ``discard(_:)`` the location when done.
    public func restore(_ fixture: UpgradeFixture) throws -> (location: StoreLocation, coordinator: MigrationCoordinator) {
        let location = try makeLocation()
        let coordinator = try makeCoordinator(location)
        do {
            try restore(fixture, into: CoordinatorStores(coordinator))
        } catch {
            try? discard(location, stores: CoordinatorStores(coordinator))
            throw error
        }
        return (location, coordinator)
    }

    private func restore(_ fixture: UpgradeFixture, into stores: CoordinatorStores) throws {
        for store in fixture.stores {
            guard let group = stores.group(named: store.managers[0]) else {
                throw UpgradeTestingError(store: store.label, reason: .storeNotInCoordinator)
            }
            guard let kind = kinds.first(where: { $0.name == store.kind }) else {
                throw UpgradeTestingError(store: store.label, reason: .unknownKind(kind: store.kind))
            }
            try kind.restore(group.store, from: fixture.folder(of: store))
        }
    }

    // MARK: Seeding

    /// Builds the stores at `version` from the registered migrations themselves (a run targeted
    /// at each manager's highest migration at or below it), lets `insert` add the test's data,
    /// and captures the result into `folder` as a fixture of `version`.
    ///
    /// A version inside the range of a squashed migration cannot be seeded by a coordinator that
    /// registers the squash (a new store takes it whole): seed it with a tester whose factory
    /// leaves the squash out, the history replayed, and check the fixture with this one.
    ///
    /// ```swift
    /// let fixture = try tester.seed(at: "1.1", into: folder) { stores in
    ///     try stores.store("library", as: SQLiteStore.self).write { db in
    ///         try db.execute("INSERT INTO note(title, date) VALUES ('Drafts', '2024-01-01')")
    ///     }
    /// }
    /// try tester.check(fixture)
    /// ```
    @discardableResult
    public func seed(at version: Version, into folder: URL, _ insert: (SeededStores) throws -> Void) throws -> UpgradeFixture {
        let location = try makeLocation()
        let coordinator = try makeCoordinator(location)
        defer { try? discard(location, stores: CoordinatorStores(coordinator)) }
        let targets = coordinator.registeredManagers.compactMap { manager in
            manager.versions.last { $0 <= version }.map { MigrationReference(manager: manager.name, version: $0) }
        }
        if !targets.isEmpty {
            // A new store takes a squashed migration whole, even for a target inside its range:
            // stores seeded that way would hold more than `version`.
            let report = try coordinator.run(targets: targets)
            if let squash = report.steps.first(where: { $0.id.action == .squash && $0.id.version.map { $0 > version } ?? false }) {
                throw UpgradeTestingError(
                    store: squash.id.manager, reason: .seededThroughSquash(version: version, squash: squash.id.description))
            }
        }
        try insert(SeededStores(version: version, location: location, coordinator: coordinator))
        return try capture(CoordinatorStores(coordinator), appVersion: version, into: folder)
    }

    // MARK: Checking

    /// Restores `fixture`, upgrades it with the current coordinator, and compares it with a
    /// fresh install of the same coordinator: every store's schema, every manager's applied
    /// migrations, the keys a fresh install writes; then checks ``invariants``.
    ///
    /// - Returns: What was compared, when everything matches.
    /// - Throws: ``UpgradeCheckFailure`` listing every difference; the upgrade's own error
    ///   (`MigrationRunError`) when a migration fails on the fixture; ``UpgradeTestingError``
    ///   for a fixture the tester cannot restore.
    @discardableResult
    public func check(_ fixture: UpgradeFixture) throws -> UpgradeCheckReport {
        var cleanups: [() throws -> Void] = []
        defer { for cleanup in cleanups { try? cleanup() } }

        let (upgradedLocation, upgradedCoordinator) = try restore(fixture)
        let upgraded = CoordinatorStores(upgradedCoordinator)
        cleanups.append { try discard(upgradedLocation, stores: upgraded) }
        let report = try upgradedCoordinator.run()

        let freshLocation = try makeLocation()
        let freshCoordinator = try makeCoordinator(freshLocation)
        let fresh = CoordinatorStores(freshCoordinator)
        cleanups.append { try discard(freshLocation, stores: fresh) }
        try freshCoordinator.run()

        var differences: [UpgradeDifference] = []
        var baselines: [String] = []
        for freshGroup in fresh.groups {
            guard let upgradedGroup = upgraded.group(named: freshGroup.names[0]) else { continue }
            let kind = try requiredKind(for: freshGroup)
            let upgradedRecords = try upgradedGroup.store.readRecords()
            let freshEntries = try kind.snapshot(of: freshGroup.store)
                + RecordEntries.entries(freshGroup.managers, records: try freshGroup.store.readRecords())
            let upgradedEntries = try kind.snapshot(of: upgradedGroup.store)
                + RecordEntries.entries(upgradedGroup.managers, records: upgradedRecords)
            differences += SnapshotComparison.differences(
                fresh: freshEntries, upgraded: upgradedEntries, store: freshGroup.label, from: fixture.appVersion)
            baselines += RecordEntries.baselines(upgradedGroup.managers, records: upgradedRecords)
        }

        if !invariants.isEmpty {
            let (beforeLocation, beforeCoordinator) = try restore(fixture)
            let before = CoordinatorStores(beforeCoordinator)
            cleanups.append { try discard(beforeLocation, stores: before) }
            for invariant in invariants {
                guard let beforeGroup = before.group(holding: invariant.manager),
                    let afterGroup = upgraded.group(holding: invariant.manager)
                else { throw UpgradeTestingError(store: invariant.manager, reason: .noSuchStore(type: "any")) }
                differences += try invariant.check(beforeGroup.store, afterGroup.store).map { problem in
                    UpgradeDifference(
                        store: afterGroup.label, upgradedFrom: fixture.appVersion, kind: .invariant, location: invariant.name,
                        fresh: invariant.name, upgraded: problem)
                }
            }
        }

        guard differences.isEmpty else {
            throw UpgradeCheckFailure(
                upgradedFrom: fixture.appVersion, appVersion: upgradedCoordinator.appVersion, differences: differences)
        }
        return UpgradeCheckReport(
            upgradedFrom: fixture.appVersion, appVersion: upgradedCoordinator.appVersion, upgrade: report,
            stores: fresh.groups.map(\.label), invariantsChecked: invariants.count, baselines: baselines)
    }

    // MARK: Fresh installs

    /// Installs the app twice on new stores, once with the tester's coordinator (the release as
    /// it ships, taking its shortcuts: squashed migrations, stores created from a declared schema)
    /// and once with `reference`'s (the same history replayed: the original migrations only),
    /// and checks that both end alike, store by store:
    ///
    /// - **schema** and **content**: what each kind compares (``StoreFixtureKind/snapshot(of:)``)
    ///   and what each install holds (``StoreFixtureKind/contents(of:)``: rows, keys with their
    ///   values, files), both ways;
    /// - **records**: for each registered migration of each manager, applied or not, with the
    ///   same name and fingerprint, or under the same baseline mark; the app version the hook
    ///   last ran for; what is in progress. Only when each migration was applied and how long it
    ///   took are ignored: they differ from run to run, and a squash records its replaced
    ///   migrations with its own start time and no duration of theirs;
    /// - **invariants**: each of ``invariants``, given the reference install as `before` and each
    ///   install in turn as `after` (a fresh install has no fixture).
    ///
    /// ```swift
    /// let shipped = UpgradeTester(kinds: [.sqlite]) { location in
    ///     try NotesStores.coordinator(in: location.directory)
    /// }
    /// try shipped.checkFreshInstall { location in
    ///     try NotesStores.coordinator(in: location.directory, squashes: false)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - path: The name of the tester's install in the diff: `as shipped`, `through the squash`.
    ///   - referencePath: The name of the reference install in the diff.
    ///   - reference: Builds the reference coordinator at a location, as the tester's factory
    ///     does: the same managers and stores, with another registration of the same history.
    /// - Returns: What was compared, when both installs end alike.
    /// - Throws: ``FreshInstallCheckFailure`` listing every difference; a run's own error
    ///   (`MigrationRunError`) when a migration fails on a fresh store.
    @discardableResult
    public func checkFreshInstall(
        _ path: String = "as shipped", referencePath: String = "replayed", matches reference: @escaping CoordinatorFactory
    ) throws -> FreshInstallCheckReport {
        var cleanups: [() throws -> Void] = []
        defer { for cleanup in cleanups { try? cleanup() } }
        func install(_ factory: CoordinatorFactory) throws -> (stores: CoordinatorStores, report: MigrationReport, appVersion: Version) {
            let location = try makeLocation()
            let coordinator = try factory(location)
            let stores = CoordinatorStores(coordinator)
            cleanups.append { try discard(location, stores: stores) }
            return (stores, try coordinator.run(), coordinator.appVersion)
        }
        let installed = try install(makeCoordinator)
        let replayed = try install(reference)

        var differences: [FreshInstallCheckFailure.Difference] = []
        var steps: [String] = []
        for referenceGroup in replayed.stores.groups {
            let label = referenceGroup.label
            guard let group = installed.stores.group(named: referenceGroup.names[0]), group.names == referenceGroup.names else {
                let other = installed.stores.group(holding: referenceGroup.names[0])?.label
                differences.append(FreshInstallCheckFailure.Difference(
                    store: label, kind: .records, location: "managers of the store", reference: label, installed: other, path: path))
                continue
            }
            let found = try entries(of: group), expected = try entries(of: referenceGroup)
            let before = differences.count
            differences += SnapshotComparison.mismatches(expected: expected, actual: found, actualMayAddKeys: false).map { mismatch in
                FreshInstallCheckFailure.Difference(
                    store: label, kind: UpgradeDifference.Kind(mismatch.aspect), location: mismatch.location,
                    reference: mismatch.expected, installed: mismatch.actual, path: path)
            }
            if differences.count > before {
                func ran(_ report: MigrationReport) -> String {
                    let ids = report.steps.filter { group.names.contains($0.id.manager) }.map(\.id.description)
                    return ids.isEmpty ? "no step" : ids.joined(separator: ", ")
                }
                steps.append("\(label) \(path): \(ran(installed.report)); \(referencePath): \(ran(replayed.report))")
            }
        }
        for group in installed.stores.groups where replayed.stores.group(holding: group.names[0]) == nil {
            differences.append(FreshInstallCheckFailure.Difference(
                store: group.label, kind: .records, location: "managers of the store", reference: nil, installed: group.label, path: path))
        }
        for invariant in invariants {
            guard let referenceGroup = replayed.stores.group(holding: invariant.manager),
                let group = installed.stores.group(holding: invariant.manager)
            else { throw UpgradeTestingError(store: invariant.manager, reason: .noSuchStore(type: "any")) }
            for (side, store) in [(referencePath, referenceGroup.store), (path, group.store)] {
                differences += try invariant.check(referenceGroup.store, store).map { problem in
                    FreshInstallCheckFailure.Difference(
                        store: group.label, kind: .invariant, location: invariant.name, reference: invariant.name, installed: problem,
                        path: side)
                }
            }
        }

        guard differences.isEmpty else {
            throw FreshInstallCheckFailure(
                appVersion: installed.appVersion, path: path, referencePath: referencePath, steps: steps, differences: differences)
        }
        return FreshInstallCheckReport(
            appVersion: installed.appVersion, path: path, referencePath: referencePath, install: installed.report,
            reference: replayed.report, stores: replayed.stores.groups.map(\.label), invariantsChecked: invariants.count)
    }

    /// What a fresh install of a store is compared by: its kind's schema and content, and its
    /// managers' records with their names and fingerprints.
    private func entries(of group: CoordinatorStores.Group) throws -> [SnapshotEntry] {
        let kind = try requiredKind(for: group)
        return try kind.snapshot(of: group.store) + kind.contents(of: group.store)
            + RecordEntries.labelledEntries(group.managers, records: try group.store.readRecords())
    }

    // MARK: Kinds

    private func kind(for group: CoordinatorStores.Group) -> (any StoreFixtureKind)? {
        kinds.first { $0.accepts(group.store) }
    }

    private func requiredKind(for group: CoordinatorStores.Group) throws -> any StoreFixtureKind {
        guard let kind = kind(for: group) else {
            throw UpgradeTestingError(store: group.label, reason: .noKind(store: group.store.description))
        }
        return kind
    }
}
