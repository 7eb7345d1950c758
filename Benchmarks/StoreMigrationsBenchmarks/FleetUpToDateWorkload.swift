import Foundation
#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import StoreMigrations
import StoreMigrationsSQLite

/// The fleet's up-to-date check over folders of SQLite tenant files (issue 27): `plan()` of a
/// ``MigrationFleet`` over a ``SQLiteTenantFolder`` whose every tenant has its five migrations
/// applied, against raw SQLite listing the same folder and reading each file's records (both
/// tables) with the C API, one file after another, in WAL mode (the store's default) and in
/// rollback-journal mode. Raw SQLite reads each file two ways: opened read-write as an ordinary
/// reader (how the store read before it read unchanged files `immutable`), and the store's way
/// (`immutable` under a shared lock, after looking for a `-wal` and a `-journal`). The library's
/// check runs as it ships (as many tenants at once as there are processors) and with one tenant
/// at a time, the baseline's way; the baseline reads the store's way also as many files at once
/// as the library's check reads tenants. Peak memory is read for the check of each folder: its
/// growth from the small folder to the large one is what a fleet ten times larger costs.
struct FleetUpToDateWorkload {
    let small: Int
    let large: Int
    let timer: Timer

    static let versions: [Version] = ["1.0", "1.1", "1.2", "2.0", "2.1"]

    @Sendable static func template(_ tenant: Tenant, _ coordinator: MigrationCoordinator) throws {
        let library = try coordinator.manager("library", store: SQLiteStore(url: tenant.url!))
        library.register("1.0") { db in try db.execute("CREATE TABLE note(id integer PRIMARY KEY, title text)") }
        library.register("1.1") { db in try db.execute("ALTER TABLE note ADD COLUMN body text") }
        library.register("1.2") { db in try db.execute("CREATE INDEX note_title ON note(title)") }
        library.register("2.0") { db in try db.execute("ALTER TABLE note ADD COLUMN pinned integer NOT NULL DEFAULT 0") }
        library.register("2.1") { db in try db.execute("INSERT INTO note(title, body) VALUES ('welcome', 'hello')") }
    }

    func run() throws -> [Measurement] {
        let root = try temporaryDirectory("fleet")
        defer { try? FileManager.default.removeItem(at: root) }
        var rows: [Measurement] = []
        for journalMode in [SQLiteStore.JournalMode.wal, .keep] {
            rows += try run(journalMode: journalMode, in: root.appendingPathComponent(journalMode == .wal ? "wal" : "delete"))
        }
        return rows
    }

    /// Both folders' checks, their files in WAL mode (the store's default) or in SQLite's
    /// default rollback-journal mode (`.keep` on a new database).
    private func run(journalMode: SQLiteStore.JournalMode, in root: URL) throws -> [Measurement] {
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let mode = journalMode == .wal ? "WAL" : "rollback journal"
        // One tenant migrated by the library, copied: every tenant's file is the same bytes.
        let seed = root.appendingPathComponent("seed.sqlite")
        let seeded = try MigrationFleet(appVersion: "2.1", tenants: TenantList([Tenant("seed", url: seed)])) { tenant, coordinator in
            let library = try coordinator.manager("library", store: SQLiteStore(url: tenant.url!, journalMode: journalMode))
            library.register("1.0") { db in try db.execute("CREATE TABLE note(id integer PRIMARY KEY, title text)") }
            library.register("1.1") { db in try db.execute("ALTER TABLE note ADD COLUMN body text") }
            library.register("1.2") { db in try db.execute("CREATE INDEX note_title ON note(title)") }
            library.register("2.0") { db in try db.execute("ALTER TABLE note ADD COLUMN pinned integer NOT NULL DEFAULT 0") }
            library.register("2.1") { db in try db.execute("INSERT INTO note(title, body) VALUES ('welcome', 'hello')") }
        }.migrate()
        guard seeded.migrated == 1 else { throw RawSQLiteError(message: "the seed tenant did not migrate: \(seeded)") }
        // The run's connection may close after `migrate()` returns: its pages are moved from the
        // -wal into the file first, so that the file alone holds them.
        if journalMode == .wal { try RawSQLite(path: seed.path).execute("PRAGMA wal_checkpoint(TRUNCATE)") }
        let seedBytes = try Data(contentsOf: seed)
        let sizes = small == large ? [large] : [small, large]
        var folders: [Int: URL] = [:]
        for count in sizes {
            let folder = root.appendingPathComponent("\(count)", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let progress = ProgressLine(label: "\(count) tenant files (\(mode))")
            for index in 0..<count {
                try seedBytes.write(to: folder.appendingPathComponent(String(format: "tenant-%05d.sqlite", index)))
                progress.update(index + 1, of: count)
            }
            folders[count] = folder
        }

        var rows: [Measurement] = []
        var checks: [Int: Samples] = [:]
        for count in sizes {
            let folder = folders[count]!
            let fleet = MigrationFleet(appVersion: "2.1", tenants: SQLiteTenantFolder(folder: folder), template: Self.template)
            func check(inFlight: Int?) throws {
                let plan = try fleet.plan(maxTenantsInFlight: inFlight)
                guard plan.isUpToDate, plan.upToDate == count else { throw RawSQLiteError(message: "not up to date: \(plan)") }
            }
            let shipped = try timer.compare(
                measuringMemory: true, library: { try check(inFlight: nil) }, baseline: { try Self.readByHand(folder, expecting: count) })
            checks[count] = shipped.library
            rows.append(Measurement(
                workload: "fleet: up-to-date check of \(count) SQLite tenant files (\(mode), 5 applied each)",
                metric: "fleet plan(), \(ProcessInfo.processInfo.activeProcessorCount) tenants at once, vs raw SQLite opening each file read-write in turn",
                runs: timer.runs, libraryMedian: shipped.library.median, baselineMedian: shipped.baseline.median,
                target: count >= 10_000 ? "≤ 2 s" : "(none)", libraryPeakMiB: shipped.library.peakMiB, baselinePeakMiB: shipped.baseline.peakMiB))
            if count == large {
                let storesWay = try timer.compare(
                    library: { try check(inFlight: nil) }, baseline: { try Self.readByHand(folder, expecting: count, immutable: true) })
                rows.append(Measurement(
                    workload: "fleet: up-to-date check of \(count) SQLite tenant files (\(mode), 5 applied each)",
                    metric: "fleet plan() vs raw SQLite reading each file the store's way (immutable under a shared lock), in turn",
                    runs: timer.runs, libraryMedian: storesWay.library.median, baselineMedian: storesWay.baseline.median,
                    target: "≤ 2 s"))
            }
            if count == large, journalMode == .wal {
                let inFlight = ProcessInfo.processInfo.activeProcessorCount
                let rawAtOnce = try timer.compare(
                    library: { try check(inFlight: nil) },
                    baseline: { try Self.readByHand(folder, expecting: count, immutable: true, threads: inFlight) })
                rows.append(Measurement(
                    workload: "fleet: up-to-date check of \(count) SQLite tenant files (\(mode), 5 applied each)",
                    metric: "fleet plan() vs raw SQLite reading the store's way, \(inFlight) files at once",
                    runs: timer.runs, libraryMedian: rawAtOnce.library.median, baselineMedian: rawAtOnce.baseline.median,
                    target: "≤ 2 s"))
                let oneAtATime = try timer.compare(
                    library: { try check(inFlight: 1) }, baseline: { try Self.readByHand(folder, expecting: count, immutable: true) })
                rows.append(Measurement(
                    workload: "fleet: up-to-date check of \(count) SQLite tenant files (\(mode), 5 applied each)",
                    metric: "fleet plan(maxTenantsInFlight: 1) vs raw SQLite reading each file the store's way, in turn",
                    runs: timer.runs, libraryMedian: oneAtATime.library.median, baselineMedian: oneAtATime.baseline.median, target: "(none)"))
            }
        }
        if small != large, let smallCheck = checks[small], let largeCheck = checks[large] {
            var growth = Measurement(
                workload: "fleet: the check over \(large) files against over \(small) (\(mode))",
                metric: "plan() over \(large) files (library columns) and over \(small) (baseline columns): time ratio, and peak RSS above the level before each",
                runs: timer.runs, libraryMedian: largeCheck.median, baselineMedian: smallCheck.median, target: "peak growth ≤ 10 MiB",
                libraryPeakMiB: largeCheck.peakMiB, baselinePeakMiB: smallCheck.peakMiB)
            growth.note = String(format: "peak growth %.1f MiB", (largeCheck.peakMiB ?? 0) - (smallCheck.peakMiB ?? 0))
            rows.append(growth)
        }
        return rows
    }

    /// The baseline: the folder listed with `readdir`, each `*.sqlite` file opened and both
    /// record tables read with the C API, the applied set compared with the five registered
    /// versions. A file is opened read-write, never created, as an ordinary reader
    /// (`SQLITE_OPEN_READONLY` took twice as long on WAL files here), or, when `immutable`, as
    /// the store reads an unchanged file: no `-wal` or `-journal` beside it, opened `immutable`,
    /// SQLite's shared lock taken through its file object for the read. With `threads` above 1,
    /// that many threads each take the folder's next entry under a lock and read it, as the
    /// fleet's threads do: what SQLite and the kernel allow two reads at once, without the
    /// library.
    static func readByHand(_ folder: URL, expecting count: Int, immutable: Bool = false, threads: Int = 1) throws {
        guard let directory = opendir(folder.path) else { throw RawSQLiteError(message: "opendir \(folder.path)") }
        let walk = RawWalk(directory: directory)
        defer { closedir(directory) }
        let expected = Set(versions.map(\.description))
        let folderPath = folder.path
        DispatchQueue.concurrentPerform(iterations: max(1, threads)) { _ in
            while let name = walk.nextName() {
                do {
                    if try readRecords(path: folderPath + "/" + name, immutable: immutable) == expected { walk.countUpToDate() }
                } catch {
                    walk.fail(error)
                }
            }
        }
        let (upToDate, failure) = walk.outcome
        if let failure { throw failure }
        guard upToDate == count else { throw RawSQLiteError(message: "\(upToDate) of \(count) up to date by hand") }
    }

    #if canImport(Darwin)
    private typealias DirectoryStream = UnsafeMutablePointer<DIR>
    #else
    private typealias DirectoryStream = OpaquePointer
    #endif

    /// The baseline's folder and tallies, shared by its threads.
    private final class RawWalk: @unchecked Sendable {
        // @unchecked: the directory stream and both tallies are only used with `lock` held.
        private let lock = NSLock()
        private let directory: DirectoryStream
        private var upToDate = 0
        private var failure: (any Error)?

        init(directory: DirectoryStream) {
            self.directory = directory
        }

        /// The next `*.sqlite` entry's name; `nil` after the last or once a read failed.
        func nextName() -> String? {
            lock.withLock {
                while failure == nil, let entry = readdir(directory) {
                    let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                    if name.hasSuffix(".sqlite") { return name }
                }
                return nil
            }
        }

        func countUpToDate() { lock.withLock { upToDate += 1 } }
        func fail(_ error: any Error) { lock.withLock { failure = failure ?? error } }
        var outcome: (upToDate: Int, failure: (any Error)?) { lock.withLock { (upToDate, failure) } }
    }

    /// The versions in one file's record tables, read as ``readByHand(_:expecting:immutable:threads:)`` says.
    private static func readRecords(path: String, immutable: Bool) throws -> Set<String> {
        var handle: OpaquePointer?
        defer { sqlite3_close_v2(handle) }
        var file: UnsafeMutablePointer<sqlite3_file>?
        if immutable {
            guard access(path + "-wal", F_OK) != 0, access(path + "-journal", F_OK) != 0,
                  sqlite3_open_v2("file:\(path)?immutable=1", &handle, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nil) == SQLITE_OK,
                  sqlite3_file_control(handle, "main", SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK, let file,
                  file.pointee.pMethods.pointee.xLock(file, SQLITE_LOCK_SHARED) == SQLITE_OK
            else { throw RawSQLiteError(message: "open \(path) immutable") }
        } else {
            guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE, nil) == SQLITE_OK else {
                throw RawSQLiteError(message: "open \(path)")
            }
        }
        defer {
            if let file {
                // The store looks for a -wal again after the read.
                _ = access(path + "-wal", F_OK)
                _ = file.pointee.pMethods.pointee.xUnlock(file, SQLITE_LOCK_NONE)
            }
        }
        var statement: OpaquePointer?
        let sql = "SELECT manager, version FROM store_migrations_history UNION ALL SELECT manager, level FROM store_migrations_levels"
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK else { throw RawSQLiteError(message: sql) }
        defer { sqlite3_finalize(statement) }
        var applied = Set<String>()
        while sqlite3_step(statement) == SQLITE_ROW {
            if let text = sqlite3_column_text(statement, 1) { applied.insert(String(cString: text)) }
        }
        return applied
    }
}
