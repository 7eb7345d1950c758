import Foundation
import StoreMigrations
import StoreMigrationsSQLite

/// The launch workload's three stores (preferences, SQLite, cache, 100 applied migrations
/// each), the database also holding a table of 1,000,000 rows and a 101st migration of it: a
/// deferred resumable row transform. Library: a launch whose only pending step is that deferred
/// one, timed until `run()` returns (the step goes on in the background). Baseline: the same
/// launch, same registrations, on a copy of the database where the step is already applied: an
/// up-to-date launch. A second row does the same with `deferredWork = .manual`, which starts no
/// background run: what the launch costs apart from the background run starting beside it on
/// the machine's cores.
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
            let first = try configure(files(pendingTemplate.lastPathComponent), withDeferredStep: false).coordinator.run()
            precondition(first.steps.count == 3 * migrationsPerStore && first.postponed.isEmpty)
        }()
        try settle(pendingTemplate)

        // The up-to-date database: the same, with the deferred step run to its end.
        let applied = directory.appendingPathComponent("applied.sqlite")
        try FileManager.default.copyItem(at: pendingTemplate, to: applied)
        weak var releasedStore: SQLiteStore?
        try {
            let (coordinator, store) = try configure(files(applied.lastPathComponent), withDeferredStep: true)
            releasedStore = store
            let launch = try coordinator.run()
            precondition(launch.postponed.count == 1, "the deferred step was not postponed: \(launch)")
            guard let background = coordinator.backgroundRun else { fatalError("no background run after a deferred step") }
            let report = try background.wait()
            precondition(report.didRunAnything, "the background run did not apply the deferred step: \(report)")
        }()
        try waitUntilReleased { releasedStore == nil && !isOpen(applied) }
        try settle(applied)
        let missing = try RawSQLite(path: applied.path).integers("SELECT count(*) FROM event WHERE guid IS NULL")
        precondition(missing == [0], "the deferred step left \(missing[0]) rows without a GUID")

        let pending = directory.appendingPathComponent("pending.sqlite")
        let scratch = directory.appendingPathComponent("scratch.sqlite")

        /// Times the deferred launch against the up-to-date one, the deferred work going to the
        /// background as by default, or left for the app to start (`.manual`).
        func compareLaunches(deferredWork: DeferredWork) throws -> Measurement {
            var launched: MigrationCoordinator?
            var backgroundBatches = 0, backgroundFinished = 0

            // Stops the background run the last library launch started, waits for its end and
            // for its store to be released: its connection closed, before the file is replaced.
            func stopBackground() throws {
                guard launched != nil else { return }
                do {
                    let background = launched?.backgroundRun
                    precondition((background == nil) == (deferredWork == .manual), "background run: \(String(describing: background))")
                    launched = nil
                    background?.cancel()
                    if let background, (try? background.wait()) != nil { backgroundFinished += 1 }
                }
                try waitUntilReleased { releasedStore == nil && !isOpen(pending) }
                let progress = try RawSQLite(path: pending.path).scalarText(
                    "SELECT progress FROM store_migrations_levels WHERE manager = 'library'")
                if progress != nil { backgroundBatches += 1 }
            }

            let (deferredRuns, upToDateRuns) = try timer.compare(
                prepareLibrary: { try copy(pendingTemplate, to: pending) },
                library: {
                    let (coordinator, store) = try configure(files(pending.lastPathComponent), withDeferredStep: true)
                    coordinator.deferredWork = deferredWork
                    launched = coordinator
                    releasedStore = store
                    try deferredLaunch(coordinator)
                },
                prepareBaseline: {
                    try stopBackground()
                    // The same copy, so that both sides start right after one.
                    try copy(pendingTemplate, to: scratch)
                },
                baseline: {
                    let coordinator = try configure(files(applied.lastPathComponent), withDeferredStep: true).coordinator
                    coordinator.deferredWork = deferredWork
                    try upToDateLaunch(coordinator)
                })
            try stopBackground()

            let manual = deferredWork == .manual
            var note = manual ? "no background run started" : "background run cancelled and waited for after every launch"
            if backgroundBatches > 0 { note += "; \(backgroundBatches) of \(timer.runs + 1) committed a batch before the cancel" }
            if backgroundFinished > 0 { note += "; \(backgroundFinished) finished the step first" }
            return Measurement(
                workload: "deferred launch (3 stores × \(migrationsPerStore) applied, deferred \(rows)-row step)",
                metric: manual
                    ? "the same, deferredWork = .manual (diagnostic: the launch without the background run beside it)"
                    : "run() returning with the deferred step pending vs an up-to-date launch",
                runs: timer.runs, libraryMedian: deferredRuns.median, baselineMedian: upToDateRuns.median,
                target: manual ? "(diagnostic)" : "≤ 1.2×", note: note)
        }

        return [try compareLaunches(deferredWork: .background(qos: .utility)), try compareLaunches(deferredWork: .manual)]
    }

    /// A new coordinator with the three managers and their registrations, as an app's launch
    /// builds it; with the deferred row transform as the database's 101st migration.
    private func configure(_ files: Files, withDeferredStep: Bool) throws -> (coordinator: MigrationCoordinator, library: SQLiteStore) {
        let store = SQLiteStore(url: files.database)
        let coordinator = MigrationCoordinator(appVersion: Version(migrationsPerStore + 1))
        let prefs = try coordinator.manager("prefs", store: PreferencesStore(url: files.prefs))
        let library = try coordinator.manager("library", store: store)
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
        return (coordinator, store)
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

    /// Waits for the background run's thread to let go of what it used and close its files.
    private func waitUntilReleased(_ released: () -> Bool) throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while !released() {
            guard ContinuousClock.now < deadline else { throw RawSQLiteError(message: "the background run kept its store for 30 s") }
            usleep(1_000)
        }
    }

    /// Whether this process still has `url` or its `-wal` or `-shm` open. The store is released
    /// before its connection has closed (a weak reference is cleared before `deinit` runs, and
    /// closing checkpoints the log), so the workload waits for the files themselves. Linux only;
    /// elsewhere, `false`.
    private func isOpen(_ url: URL) -> Bool {
        guard let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return false }
        let path = url.standardizedFileURL.resolvingSymlinksInPath().path
        return descriptors.contains { descriptor in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + descriptor) else { return false }
            return target.hasPrefix(path)
        }
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
