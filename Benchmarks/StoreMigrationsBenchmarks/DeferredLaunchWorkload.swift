import Foundation
import StoreMigrations
import StoreMigrationsSQLite

/// The launch workload's three stores (preferences, SQLite, cache, 100 applied migrations
/// each), the database also holding a table of 1,000,000 rows and a 101st migration of it: a
/// deferred resumable row transform. Library: a launch whose only pending step is that deferred
/// one, timed until `run()` returns (the step goes on in the background). Baseline: the same
/// launch, same registrations, on a copy of the database where the step is already applied: an
/// up-to-date launch.
///
/// Between runs, outside the timing, the background run is cancelled and waited for, so that
/// no batch of it runs during the next launch, and the database is copied again from a
/// template, so that every launch finds the same pending step. The copy is written to disk
/// before the launch (both sides run after a copy of the same size), so that no writeback of
/// it is left to slow one side.
struct DeferredLaunchWorkload {
    let rows: Int
    let migrationsPerStore = 100
    let timer: Timer

    private struct Files {
        let prefs: URL
        let database: URL
        let cache: URL
    }

    func run() throws -> [Measurement] {
        let fixture = try SQLiteFixture(
            name: "deferred-launch", rows: rows,
            schema: "CREATE TABLE event(id INTEGER PRIMARY KEY, name TEXT NOT NULL, guid TEXT)",
            insert: "INSERT INTO event(name) VALUES (?)", values: { ["event \($0)"] })
        defer { fixture.remove() }
        let directory = fixture.directory
        func files(_ database: String) -> Files {
            Files(
                prefs: directory.appendingPathComponent("prefs.json"),
                database: directory.appendingPathComponent(database),
                cache: directory.appendingPathComponent("cache", isDirectory: true))
        }
        try Data(#"{"theme": "dark", "fontSize": 14}"#.utf8).write(to: files("").prefs)

        // The template: the 300 ordinary migrations applied, the deferred one not registered yet.
        let pendingTemplate = try fixture.copy("pending-template.sqlite")
        try {
            let first = try configure(files(pendingTemplate.lastPathComponent), withDeferredStep: false).run()
            precondition(first.steps.count == 3 * migrationsPerStore && first.postponed.isEmpty)
        }()
        try settle(pendingTemplate)

        // The up-to-date database: the same, with the deferred step run to its end.
        let applied = directory.appendingPathComponent("applied.sqlite")
        try FileManager.default.copyItem(at: pendingTemplate, to: applied)
        try {
            let coordinator = try configure(files(applied.lastPathComponent), withDeferredStep: true)
            let launch = try coordinator.run()
            precondition(launch.postponed.count == 1, "the deferred step was not postponed: \(launch)")
            guard let background = coordinator.backgroundRun else { fatalError("no background run after a deferred step") }
            let report = try background.wait()
            precondition(report.didRunAnything, "the background run did not apply the deferred step: \(report)")
        }()
        try settle(applied)
        let missing = try RawSQLite(path: applied.path).integers("SELECT count(*) FROM event WHERE guid IS NULL")
        precondition(missing == [0], "the deferred step left \(missing[0]) rows without a GUID")

        let pending = directory.appendingPathComponent("pending.sqlite")
        let scratch = directory.appendingPathComponent("scratch.sqlite")
        var launched: MigrationCoordinator?
        var backgroundBatches = 0, backgroundFinished = 0

        // Stops the background run the last library launch started, and waits for its end.
        func stopBackground() throws {
            guard let coordinator = launched else { return }
            launched = nil
            guard let background = coordinator.backgroundRun else { fatalError("no background run after a deferred launch") }
            background.cancel()
            if (try? background.wait()) != nil { backgroundFinished += 1 }
            let progress = try RawSQLite(path: pending.path).scalarText(
                "SELECT progress FROM store_migrations_levels WHERE manager = 'library'")
            if progress != nil { backgroundBatches += 1 }
        }

        let (deferredRuns, upToDateRuns) = try timer.compare(
            prepareLibrary: { try copy(pendingTemplate, to: pending) },
            library: {
                let coordinator = try configure(files(pending.lastPathComponent), withDeferredStep: true)
                launched = coordinator
                try deferredLaunch(coordinator)
            },
            prepareBaseline: {
                try stopBackground()
                // The same copy, so that both sides start right after one.
                try copy(pendingTemplate, to: scratch)
            },
            baseline: { try upToDateLaunch(configure(files(applied.lastPathComponent), withDeferredStep: true)) })
        try stopBackground()

        var note = "background run cancelled and waited for after every launch"
        if backgroundBatches > 0 { note += "; \(backgroundBatches) of \(timer.runs + 1) committed a batch before the cancel" }
        if backgroundFinished > 0 { note += "; \(backgroundFinished) finished the step first" }
        return [Measurement(
            workload: "deferred launch (3 stores × \(migrationsPerStore) applied, deferred \(rows)-row step)",
            metric: "run() returning with the deferred step pending vs an up-to-date launch",
            runs: timer.runs, libraryMedian: deferredRuns.median, baselineMedian: upToDateRuns.median, target: "≤ 1.2×",
            note: note)]
    }

    /// A new coordinator with the three managers and their registrations, as an app's launch
    /// builds it; with the deferred row transform as the database's 101st migration.
    private func configure(_ files: Files, withDeferredStep: Bool) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: Version(migrationsPerStore + 1))
        let prefs = try coordinator.manager("prefs", store: PreferencesStore(url: files.prefs))
        let library = try coordinator.manager("library", store: SQLiteStore(url: files.database))
        let cache = try coordinator.manager("cache", store: CacheStore(directory: files.cache))
        for version in 1...migrationsPerStore {
            prefs.register(Version(version)) { _ in }
            library.register(Version(version)) { _ in }
            cache.register(Version(version)) { _ in }
        }
        if withDeferredStep {
            library.registerResumable(
                Version(migrationsPerStore + 1), transformingRowsOf: "event", columns: ["id", "guid"], deferred: true
            ) { row in
                ["guid": .text(computedGUID(try row["id"]))]
            }
        }
        return coordinator
    }

    /// The timed launches, not inlined, so that callgrind can count them apart.
    @inline(never)
    private func deferredLaunch(_ coordinator: MigrationCoordinator) throws {
        let report = try coordinator.run()
        precondition(report.postponed.count == 1 && !report.didRunAnything, "not a deferred launch: \(report)")
    }

    @inline(never)
    private func upToDateLaunch(_ coordinator: MigrationCoordinator) throws {
        let report = try coordinator.run()
        precondition(report.steps.isEmpty, "not an up-to-date launch: \(report)")
    }

    /// Leaves `url` as one file, its write-ahead log checkpointed into it, in WAL mode as the
    /// store left it.
    private func settle(_ url: URL) throws {
        try RawSQLite(path: url.path).execute("PRAGMA wal_checkpoint(TRUNCATE)")
        for suffix in ["-wal", "-shm"] {
            precondition(!FileManager.default.fileExists(atPath: url.path + suffix), "\(url.lastPathComponent)\(suffix) was left")
        }
    }

    /// Copies `template` over `url`, and writes the copy to disk.
    private func copy(_ template: URL, to url: URL) throws {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
        try FileManager.default.copyItem(at: template, to: url)
        let handle = try FileHandle(forUpdating: url)
        defer { try? handle.close() }
        try handle.synchronize()
    }
}
