import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

/// Late migrations on real files: a version registered below the level that was never applied
/// (1.1.1 merged after 1.2 shipped), under each ``LateMigrationPolicy``, and stores written by
/// the previous release (a level only), whose level counts as applied all the way down.
@Suite struct LateMigrationTests {
    let folder: TemporaryFolder
    let bodies = BodyCounter()

    init() throws {
        folder = try TemporaryFolder()
    }

    var root: URL { folder.url }

    /// Runs `versions` of manager "m" at app version 1.2 with `policy`, on a fresh store object,
    /// and returns the report once the store is let go of.
    @discardableResult
    func run(
        _ kind: FileStoreKind, _ versions: [Version], appVersion: Version = "1.2", policy: LateMigrationPolicy = .run
    ) throws -> MigrationReport {
        let report: MigrationReport
        do {
            let coordinator = MigrationCoordinator(appVersion: appVersion)
            try kind.addManager("m", to: coordinator, root: root, versions: versions, bodies: bodies, latePolicy: policy)
            report = try coordinator.run()
        }
        settleDatabases(below: root)
        return report
    }

    func plan(_ kind: FileStoreKind, _ versions: [Version], appVersion: Version = "1.2", policy: LateMigrationPolicy) throws -> MigrationPlan {
        let coordinator = MigrationCoordinator(appVersion: appVersion)
        try kind.addManager("m", to: coordinator, root: root, versions: versions, bodies: bodies, latePolicy: policy)
        return try coordinator.plan()
    }

    func record(_ kind: FileStoreKind) throws -> MigrationRecord {
        try kind.makeStore(root: root).readRecords()["m"] ?? MigrationRecord()
    }

    /// The first release applied 1.0 and 1.2.
    func applyFirstRelease(_ kind: FileStoreKind) throws {
        try run(kind, ["1.0", "1.2"])
        #expect(bodies.counts == ["m@1.0": 1, "m@1.2": 1])
        #expect(try record(kind).appliedVersions == ["1.0", "1.2"])
        #expect(try record(kind).baseline == nil)
    }

    static let withLateMigration: [Version] = ["1.0", "1.1.1", "1.2"]

    @Test(arguments: FileStoreKind.oneOfEach)
    func aLateMigrationRunsExactlyOnceUnderTheRunPolicy(kind: FileStoreKind) throws {
        try applyFirstRelease(kind)

        let planned = try plan(kind, Self.withLateMigration, policy: .run)
        #expect(planned.managers.map(\.level) == ["1.2"])
        #expect(planned.managers.map(\.late) == [["1.1.1"]])
        #expect(planned.managers.map(\.pending) == [["1.1.1"]])
        #expect(planned.steps.map(\.id.description) == ["m@1.1.1"])
        #expect(planned.blockingErrors.isEmpty && !planned.isUpToDate)

        let report = try run(kind, Self.withLateMigration, policy: .run)
        #expect(report.steps.map(\.step.id.description) == ["m@1.1.1"])
        #expect(report.steps.map(\.outcome) == [.applied])
        #expect(report.managers.map(\.levelAfter) == ["1.2"], "the level stays 1.2")
        #expect(bodies.counts == ["m@1.0": 1, "m@1.1.1": 1, "m@1.2": 1])
        #expect(try kind.onDiskRuns(root: root) == ["1.0": 1, "1.1.1": 1, "1.2": 1])
        #expect(try record(kind).appliedVersions == ["1.0", "1.1.1", "1.2"])

        // A third launch has nothing to do.
        #expect(try plan(kind, Self.withLateMigration, policy: .run).isUpToDate)
        let third = try run(kind, Self.withLateMigration, policy: .run)
        #expect(third.steps.isEmpty && !third.didRunAnything)
        #expect(bodies.counts == ["m@1.0": 1, "m@1.1.1": 1, "m@1.2": 1])
        #expect(try kind.onDiskRuns(root: root) == ["1.0": 1, "1.1.1": 1, "1.2": 1])
    }

    @Test(arguments: FileStoreKind.oneOfEach)
    func aLateMigrationUnderTheFailPolicyStopsTheRunBeforeAnythingRuns(kind: FileStoreKind) throws {
        try applyFirstRelease(kind)
        let before = try FolderSnapshot(root)
        let store = kind.makeStore(root: root).description
        let expected = MigrationError.lateMigrations(manager: "m", store: store, versions: ["1.1.1"], level: "1.2")

        let planned = try plan(kind, Self.withLateMigration, policy: .fail)
        #expect(planned.managers.map(\.late) == [["1.1.1"]])
        #expect(planned.managers.map(\.pending) == [[]])
        #expect(planned.blockingErrors == [expected])
        #expect(!planned.isUpToDate)

        // A 1.3 pending as well: it does not run either.
        #expect(throws: expected) { try run(kind, Self.withLateMigration + ["1.3"], appVersion: "1.3", policy: .fail) }
        #expect(throws: expected) { try run(kind, Self.withLateMigration, policy: .fail) }
        #expect(bodies.counts == ["m@1.0": 1, "m@1.2": 1])
        let after = try FolderSnapshot(root)
        #expect(after == before, "the store changed: \(after.changes(since: before))")
    }

    @Test(arguments: FileStoreKind.oneOfEach)
    func anIgnoredLateMigrationIsListedAndNeverRuns(kind: FileStoreKind) throws {
        try applyFirstRelease(kind)
        let before = try FolderSnapshot(root)

        let planned = try plan(kind, Self.withLateMigration, policy: .ignore)
        #expect(planned.managers.map(\.late) == [["1.1.1"]])
        #expect(planned.managers.map(\.latePolicy) == [.ignore])
        #expect(planned.managers.map(\.pending) == [[]])
        #expect(planned.steps.isEmpty && planned.blockingErrors.isEmpty)
        #expect(planned.isUpToDate)

        let report = try run(kind, Self.withLateMigration, policy: .ignore)
        #expect(report.steps.isEmpty)
        // Later migrations still run; the late one never does.
        try run(kind, Self.withLateMigration + ["1.3"], appVersion: "1.3", policy: .ignore)
        #expect(bodies.counts == ["m@1.0": 1, "m@1.2": 1, "m@1.3": 1])
        #expect(try kind.onDiskRuns(root: root) == ["1.0": 1, "1.2": 1, "1.3": 1])
        #expect(try record(kind).appliedVersions == ["1.0", "1.2", "1.3"])
        #expect(try plan(kind, Self.withLateMigration + ["1.3"], appVersion: "1.3", policy: .ignore).managers.map(\.late) == [["1.1.1"]])
        #expect(try FolderSnapshot(root) != before)
    }

    // MARK: Stores written by the previous release

    /// Writes, by hand, the record the previous release kept for manager "m" at level 1.2, with
    /// the data its 1.0 and 1.2 migrations left.
    func writePreviousRelease(_ kind: FileStoreKind) throws {
        let url = kind.storeURL(in: root)
        try FileManager.default.createDirectory(at: kind.folder(in: root), withIntermediateDirectories: true)
        switch kind {
        case .preferencesJSON:
            try Data(#"{"StoreMigrations.levels": {"m": {"level": "1.2"}}, "runs": {"1.0": 1, "1.2": 1}}"#.utf8).write(to: url)
        case .preferencesPropertyList:
            let object: [String: Any] = ["StoreMigrations.levels": ["m": ["level": "1.2"]], "runs": ["1.0": 1, "1.2": 1]]
            try PropertyListSerialization.data(fromPropertyList: object, format: .binary, options: 0).write(to: url)
        case .sqlite:
            try RawSQLite.execute(
                """
                CREATE TABLE store_migrations_levels(manager TEXT PRIMARY KEY NOT NULL, level TEXT, app_version TEXT);
                CREATE TABLE store_migrations_history(
                    id INTEGER PRIMARY KEY, manager TEXT NOT NULL, version TEXT NOT NULL,
                    applied_at TEXT NOT NULL, duration_seconds REAL NOT NULL);
                INSERT INTO store_migrations_levels(manager, level, app_version) VALUES ('m', '1.2', NULL);
                INSERT INTO store_migrations_history(manager, version, applied_at, duration_seconds) VALUES
                    ('m', '1.0', '2025-01-02T03:04:05.000Z', 0.5), ('m', '1.2', '2025-02-03T04:05:06.000Z', 0.25);
                CREATE TABLE runs(version TEXT PRIMARY KEY NOT NULL, count INTEGER NOT NULL);
                INSERT INTO runs(version, count) VALUES ('1.0', 1), ('1.2', 1);
                """, at: url.path)
        case .cache:
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            try Data(#"{"levels": {"m": {"level": "1.2"}}}"#.utf8).write(to: url.appendingPathComponent(".store-migrations.json"))
            try Data("1.0\n1.2\n".utf8).write(to: url.appendingPathComponent("runs.log"))
        }
    }

    /// The level an older release reads: the only field it knows.
    func levelAsThePreviousReleaseReadsIt(_ kind: FileStoreKind) throws -> String? {
        let url = kind.storeURL(in: root)
        switch kind {
        case .preferencesJSON, .preferencesPropertyList:
            let data = try Data(contentsOf: url)
            let object = try kind == .preferencesJSON
                ? JSONSerialization.jsonObject(with: data)
                : PropertyListSerialization.propertyList(from: data, format: nil)
            let levels = (object as? [String: Any])?["StoreMigrations.levels"] as? [String: Any]
            return (levels?["m"] as? [String: Any])?["level"] as? String
        case .sqlite:
            return try RawSQLite.strings("SELECT level FROM store_migrations_levels WHERE manager = 'm'", at: url.path).first ?? nil
        case .cache:
            let data = try Data(contentsOf: url.appendingPathComponent(".store-migrations.json"))
            let levels = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["levels"] as? [String: Any]
            return (levels?["m"] as? [String: Any])?["level"] as? String
        }
    }

    @Test(arguments: FileStoreKind.allCases)
    func aStoreOfThePreviousReleaseCountsEverythingUpToItsLevelAsApplied(kind: FileStoreKind) throws {
        try writePreviousRelease(kind)
        let legacy = try record(kind)
        #expect(legacy.level == "1.2")
        #expect(legacy.baseline == "1.2")
        #expect(legacy.isApplied("1.1.1"))

        // Under .fail, a 1.1.1 wrongly taken for late would stop the run.
        let versions = Self.withLateMigration + ["1.3"]
        let planned = try plan(kind, versions, appVersion: "1.3", policy: .fail)
        #expect(planned.managers.map(\.level) == ["1.2"])
        #expect(planned.managers.map(\.late) == [[]])
        #expect(planned.managers.map(\.pending) == [["1.3"]])
        #expect(planned.blockingErrors.isEmpty)

        let report = try run(kind, versions, appVersion: "1.3", policy: .fail)
        #expect(report.steps.map(\.step.id.description) == ["m@1.3"])
        #expect(bodies.counts == ["m@1.3": 1])
        #expect(try kind.onDiskRuns(root: root) == ["1.0": 1, "1.2": 1, "1.3": 1])

        // Still readable, by this release and by the previous one.
        let after = try record(kind)
        #expect(after.level == "1.3")
        #expect(after.isApplied("1.1.1") && after.isApplied("1.0") && after.isApplied("1.3"))
        #expect(try levelAsThePreviousReleaseReadsIt(kind) == "1.3")
        #expect(try plan(kind, versions, appVersion: "1.3", policy: .fail).isUpToDate)
        #expect(try run(kind, versions, appVersion: "1.3", policy: .fail).steps.isEmpty)
        #expect(bodies.counts == ["m@1.3": 1])
    }
}
