import Foundation
import StoreMigrations
import StoreMigrationsSQLite

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// The fixed multi-store migration the crash and multi-process tests run, in a directory of
/// their choosing: a preferences file, a SQLite database of a few thousand rows and a cache
/// directory, migrated from nothing to app version 2.0 with dependencies between the stores.
///
/// Every body is deterministic, so two runs that complete, however often they were killed on
/// the way, must leave identical data. Bodies of the transactional stores count their own runs in
/// the store they migrate (`counters.*` in the preferences, table `apply_counts` in the
/// database), in the same atomic step as their changes: a count of 2 is a step applied twice.
/// Cache bodies append their version to `runs.log` in the cache directory instead, outside any
/// transaction, since a cache step may legitimately run more than once.
struct Scenario {
    static let appVersion: Version = "2.0"
    static let preferencesName = "settings.json"
    static let databaseName = "library.sqlite"
    static let cacheName = "Thumbnails"
    static let cacheRunLog = "runs.log"

    static let preferenceItemCount = 600
    static let noteCount = 4_000
    static let thumbnailCount = 300

    let directory: URL
    var lockTimeout: Duration = .seconds(30)
    var busyTimeout: TimeInterval = 30
    /// How long the body of `library@2.0` sleeps inside its transaction, holding the database's
    /// write lock: 0 (no sleep) unless a multi-process test makes the others wait.
    var slowLibraryStep: TimeInterval = 0

    var preferencesURL: URL { directory.appendingPathComponent(Self.preferencesName) }
    var databaseURL: URL { directory.appendingPathComponent(Self.databaseName) }
    var cacheURL: URL { directory.appendingPathComponent(Self.cacheName, isDirectory: true) }

    /// A coordinator with the three managers and all their migrations registered.
    func coordinator() throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: Self.appVersion)
        let prefs = try coordinator.manager(
            "prefs", store: PreferencesStore(url: preferencesURL, lockTimeout: lockTimeout))
        let library = try coordinator.manager(
            "library", store: SQLiteStore(url: databaseURL, busyTimeout: busyTimeout))
        let thumbnails = try coordinator.manager(
            "thumbnails", store: CacheStore(directory: cacheURL, lockTimeout: lockTimeout))

        // Bodies read other stores through objects of their own, as an app's code would.
        let preferencesURL = preferencesURL, databaseURL = databaseURL, busyTimeout = busyTimeout
        let slowLibraryStep = slowLibraryStep

        prefs.register("1.0") { prefs in
            try prefs.set("metric", for: "display.units")
            try prefs.set("Ada", for: "profile.name")
            for item in 0..<Self.preferenceItemCount {
                try prefs.set(Self.text(seed: item, words: 12), for: ["items", Self.key(item)])
            }
            try Self.count("1.0", in: &prefs)
        }
        prefs.register("1.1") { prefs in
            try prefs.renameKey("display.units", to: "format.units")
            for item in 0..<Self.preferenceItemCount {
                let path: PreferenceKeyPath = ["items", Self.key(item)]
                try prefs.set((prefs.string(path) ?? "").uppercased(), for: path)
            }
            try Self.count("1.1", in: &prefs)
        }
        prefs.register("2.0", dependsOn: [library.migration("2.0")]) { prefs in
            let tagCount = try SQLiteStore(url: databaseURL, busyTimeout: busyTimeout).read { db in
                try db.scalar("SELECT count(*) FROM tag", as: Int.self) ?? 0
            }
            try prefs.set(tagCount, for: "library.tagCount")
            try Self.count("2.0", in: &prefs)
        }

        library.register("1.0") { db, context in
            try db.execute("CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL)")
            let insert = try db.prepare("INSERT INTO note(id, title, body) VALUES (?, ?, ?)")
            for id in 1...Self.noteCount {
                try insert.execute(arguments: [
                    .integer(Int64(id)), .text("Note \(id)"), .text(Self.text(seed: id, words: 30)),
                ])
                if id % 500 == 0 { context.reportProgress(completed: id, of: Self.noteCount) }
            }
            try Self.count("1.0", in: db)
        }
        library.register("1.1", dependsOn: [prefs.migration("1.1")]) { db in
            guard let units = try PreferencesStore(url: preferencesURL).read().string("format.units") else {
                throw ScenarioError(message: "library@1.1 ran before prefs@1.1 renamed format.units")
            }
            try db.addColumn("guid", type: "TEXT", to: "note")
            try db.addColumn("units", type: "TEXT", to: "note")
            try db.transformRows(in: "note", columns: ["id", "guid", "units"], batchSize: 500) { row in
                let id: Int64 = try row["id"]
                return ["guid": .text("note-\(id)"), "units": .text(units)]
            }
            try Self.count("1.1", in: db)
        }
        library.register("1.2") { db in
            try db.rebuildTable(
                "note",
                definition: """
                    id INTEGER PRIMARY KEY, guid TEXT NOT NULL UNIQUE, title TEXT NOT NULL,
                    body TEXT NOT NULL, units TEXT NOT NULL, word_count INTEGER NOT NULL DEFAULT 0
                    """)
            try db.transformRows(in: "note", columns: ["body", "word_count"], batchSize: 500) { row in
                let body: String = try row["body"]
                return ["word_count": .integer(Int64(body.split(separator: " ").count))]
            }
            try db.createIndex("note_on_word_count", on: "note", columns: ["word_count"])
            try Self.count("1.2", in: db)
        }
        library.register("2.0") { db in
            try db.execute("""
                CREATE TABLE tag(
                    id INTEGER PRIMARY KEY, note_id INTEGER NOT NULL REFERENCES note(id), name TEXT NOT NULL);
                INSERT INTO tag(note_id, name) SELECT id, 'long' FROM note WHERE word_count >= 30;
                INSERT INTO tag(note_id, name) SELECT id, 'even' FROM note WHERE id % 2 = 0;
                """)
            if slowLibraryStep > 0 { Thread.sleep(forTimeInterval: slowLibraryStep) }
            try Self.count("2.0", in: db)
        }

        thumbnails.register("1.0") { cache in
            try Self.logRun("1.0", in: cache)
            try FileManager.default.createDirectory(
                at: cache.fileURL(for: "thumbs"), withIntermediateDirectories: true)
            for number in 1...Self.thumbnailCount {
                try Data(Self.text(seed: number, words: 150).utf8)
                    .write(to: cache.fileURL(for: "thumbs/\(number).txt"), options: [])
            }
        }
        // Safe to repeat after a crash: the move helper treats an already-moved folder as done,
        // and the index is rewritten whole.
        thumbnails.register("2.0", dependsOn: [library.migration("1.2")]) { cache in
            try Self.logRun("2.0", in: cache)
            try cache.move("thumbs", to: "v2/thumbs")
            let counts = try SQLiteStore(url: databaseURL, busyTimeout: busyTimeout).read { db in
                try db.rows("SELECT id, word_count FROM note WHERE id <= ? ORDER BY id",
                            arguments: [.integer(Int64(Self.thumbnailCount))])
                    .map { row -> String in "\(try row["id"] as Int64) \(try row["word_count"] as Int64)" }
            }
            try Data((counts.joined(separator: "\n") + "\n").utf8)
                .write(to: cache.fileURL(for: "v2/word-counts.txt"), options: [])
        }
        return coordinator
    }

    /// Deterministic filler text: `words` pseudo-random words drawn from `seed`.
    static func text(seed: Int, words: Int) -> String {
        var state = UInt64(truncatingIfNeeded: seed) &* 0x9E37_79B9_7F4A_7C15 &+ 1
        let vocabulary = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]
        var result: [String] = []
        result.reserveCapacity(words)
        for _ in 0..<words {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            result.append(vocabulary[Int(state >> 33) % vocabulary.count])
        }
        return result.joined(separator: " ")
    }

    static func key(_ item: Int) -> String {
        "item" + String(repeating: "0", count: max(0, 4 - String(item).count)) + String(item)
    }

    /// `counters.v1_1` for version 1.1.
    static func counterKey(_ version: String) -> String {
        "v" + version.replacingOccurrences(of: ".", with: "_")
    }

    private static func count(_ version: String, in prefs: inout Preferences) throws {
        let path: PreferenceKeyPath = ["counters", counterKey(version)]
        try prefs.set((prefs.int(path) ?? 0) + 1, for: path)
    }

    private static func count(_ version: String, in db: Database) throws {
        try db.execute("""
            CREATE TABLE IF NOT EXISTS apply_counts(version TEXT PRIMARY KEY NOT NULL, count INTEGER NOT NULL);
            INSERT INTO apply_counts(version, count) VALUES (?, 1)
            ON CONFLICT(version) DO UPDATE SET count = count + 1;
            """, arguments: [.text(version)])
    }

    private static func logRun(_ version: String, in cache: CacheDirectory) throws {
        let path = cache.fileURL(for: cacheRunLog).path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw ScenarioError(message: "cannot open \(path): errno \(errno)")
        }
        defer { close(descriptor) }
        let line = Array((version + "\n").utf8)
        guard write(descriptor, line, line.count) == line.count else {
            throw ScenarioError(message: "cannot append to \(path): errno \(errno)")
        }
    }
}

struct ScenarioError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
