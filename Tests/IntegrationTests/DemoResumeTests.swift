import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// `swift run demo` killed with `SIGKILL` at seeded moments (its own `--kill-after`), then run
/// again on the same directory until it finishes: the stores must end as an uninterrupted run
/// leaves them, no step may be reported applied twice, and a killed run's output must have
/// arrived line by line up to the kill.
///
/// `STORE_MIGRATIONS_DEMO_KILLS` sets how many directories are killed (default 6);
/// `STORE_MIGRATIONS_DEMO_SEED` replays the moments of a failure from the seed it prints.
@Suite(.serialized) struct DemoResumeTests {
    static let rows = 3_000
    let folder: TemporaryFolder
    let demo: URL

    init() throws {
        folder = try TemporaryFolder()
        demo = try Self.findDemo()
    }

    /// The `demo` executable that `swift test` builds beside the test bundle; `DEMO` overrides.
    static func findDemo() throws -> URL {
        try builtExecutable(named: "demo", override: "DEMO")
    }

    func runDemo(in directory: URL, killAfter: Double? = nil, rows: Int = Self.rows) throws -> ChildProcess.Exit {
        var arguments = ["--dir", directory.path, "--rows", "\(rows)"]
        if let killAfter { arguments += ["--kill-after", "\(killAfter)"] }
        let child = try ChildProcess(executable: demo, arguments: arguments, logs: folder.url)
        guard let exit = child.wait(timeout: eventWaitBound) else {
            child.kill()
            throw ProcessTestFailure("demo \(arguments.joined(separator: " ")) ran past \(Int(eventWaitBound)) s")
        }
        return exit
    }

    /// The step ids a run's output reports applied, one per line (`library@1.2 (rename …) applied in`).
    static func appliedSteps(in output: String) -> [String] {
        output.split(separator: "\n").compactMap { line in
            let text = line.trimmingCharacters(in: .whitespaces)
            guard let range = text.range(of: " applied in "), let step = text[..<range.lowerBound].split(separator: " ").first,
                  step.contains("@")
            else { return nil }
            return String(step)
        }
    }

    @Test(.timeLimit(.minutes(10)))
    func aKilledDemoResumesToTheStoresOfAnUninterruptedRun() throws {
        let reference = folder.file("reference")
        let start = ContinuousClock.now
        let uninterrupted = try runDemo(in: reference)
        let elapsed = (ContinuousClock.now - start).components
        let duration = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
        try #require(uninterrupted.succeeded, "\(uninterrupted)")
        let expected = try StoreSnapshot(of: reference)
        let steps = Self.appliedSteps(in: uninterrupted.standardOutput)
        #expect(steps.sorted() == [
            "library:baseline@1.0", "library@1.1", "library@1.1-1", "library@1.2", "library@2.0", "preferences@1.1", "preferences@2.0", "thumbnails@2.0",
        ])
        #expect(!uninterrupted.standardOutput.contains("library@1.1 (guids for events and tags): applied"), "the report does not list the steps again")
        #expect(uninterrupted.standardOutput.contains("nothing pending: true"))
        #expect(FileManager.default.fileExists(atPath: reference.appendingPathComponent("plan.dot").path))
        #expect(uninterrupted.standardOutput.contains("the plan's graph: \(reference.path)/plan.dot"))

        let seed = environmentSeed("STORE_MIGRATIONS_DEMO_SEED")
        var random = SeededGenerator(seed: seed)
        let kills = environmentCount("STORE_MIGRATIONS_DEMO_KILLS", default: 6)
        var resumed = 0
        for index in 0..<kills {
            let directory = folder.file("killed-\(index)")
            var outputs: [String] = []
            var moments: [Double] = []
            // One or two kills, then a run to the end.
            for _ in 0..<Int.random(in: 1...2, using: &random) {
                // Rounded as the command line passes it, so that the demo's message can be matched.
                let moment = Double(String(format: "%.4f", Double.random(in: 0...(duration * 1.1), using: &random)))!
                moments.append(moment)
                let killed = try runDemo(in: directory, killAfter: moment)
                outputs.append(killed.standardOutput)
                if killed.signal != nil {
                    #expect(killed.signal == SIGKILL, "seed \(seed): \(killed)")
                    // Printed just before the kill (another thread may still print a line in
                    // between): with output buffered, a killed run would show nothing of it.
                    #expect(killed.standardOutput.hasPrefix("(this run kills itself with SIGKILL after \(moment) s;")
                        && killed.standardOutput.contains("\n** SIGKILL after \(moment) s **\n"),
                            "seed \(seed), kill at \(moment) s: output did not arrive line by line:\n\(killed.standardOutput)")
                } else {
                    #expect(killed.succeeded, "seed \(seed): \(killed)")
                }
            }
            let wasCreated = FileManager.default.fileExists(atPath: directory.appendingPathComponent(".legacy-1.0-complete").path)
            // A kill that came after the end left a directory migrated to the end: launched again.
            let wasFinished = outputs.contains { $0.contains("nothing pending: true") }
            let final = try runDemo(in: directory)
            try #require(final.succeeded, "seed \(seed), kills at \(moments): \(final)")
            outputs.append(final.standardOutput)
            if wasFinished {
                #expect(final.standardOutput.contains("== Launching 2.0 again in \(directory.path)"))
            } else if wasCreated {
                resumed += 1
                // Or launched again: a kill between the end of the migration and the line that
                // says nothing is pending left it finished.
                #expect(final.standardOutput.contains("== Resuming the launch of 2.0 in \(directory.path)")
                    || final.standardOutput.contains("== Launching 2.0 again in \(directory.path)"))
            }
            #expect(final.standardOutput.contains("nothing pending: true"))
            let reported = outputs.flatMap(Self.appliedSteps(in:))
            #expect(Set(reported).count == reported.count, "seed \(seed), kills at \(moments): a step was reported applied twice: \(reported)")
            #expect(try StoreSnapshot(of: directory) == expected, "seed \(seed), kills at \(moments)")
        }
        print("DemoResumeTests: \(kills) directories killed (seed \(seed)), \(resumed) resumed with 1.0 stores in place; "
            + String(format: "an uninterrupted run takes %.2f s", duration))
    }

    /// The demo's big step, the events' GUIDs (`library@1.1-1`, resumable), killed twice once a
    /// batch of it has committed (seen in the demo's output, not guessed from the clock): each
    /// relaunch says where the step stopped and resumes there, and the stores end as an
    /// uninterrupted run leaves them.
    @Test(.timeLimit(.minutes(10)))
    func itsBigStepKilledTwiceResumesWhereItStoppedAndSaysSo() throws {
        let rows = 30_000
        let reference = folder.file("reference-big")
        let uninterrupted = try runDemo(in: reference, rows: rows)
        try #require(uninterrupted.succeeded, "\(uninterrupted)")
        let expected = try StoreSnapshot(of: reference)

        let directory = folder.file("big")
        var cursors: [String] = []
        for kill in 1...2 {
            let child = try ChildProcess(executable: demo, arguments: ["--dir", directory.path, "--rows", "\(rows)"], logs: folder.url)
            // Killed once a batch committed after the point this launch resumed from.
            let committed = waitUntil { child.outputSoFar.contains("library@1.1-1 (fill event guids) batch committed") }
            #expect(committed, "no batch of library@1.1-1 committed in launch \(kill)")
            let killed = child.kill()
            try #require(killed.signal == SIGKILL, "the demo ended before its kill: \(killed)")
            let state = killed.standardOutput.split(separator: "\n").last { $0.contains("library@1.1-1 (fill event guids) batch committed") }
            cursors.append(String(state?.split(separator: " ").last ?? ""))
        }
        let final = try runDemo(in: directory, rows: rows)
        try #require(final.succeeded, "\(final)")
        // The launch after the second kill says where the step stopped: at the cursor of the last
        // batch that committed before the kill, or further if one committed while it was killed.
        let resumeLine = try #require(final.standardOutput.split(separator: "\n").first { $0.contains("was stopped part-way") })
        #expect(resumeLine.hasPrefix("  library@1.1-1 was stopped part-way by the last launch: it resumes after ["))
        let resumedAt = Int(resumeLine.split(separator: "[")[1].split(separator: "]")[0])!
        #expect(resumedAt >= Int(cursors[1].dropFirst().dropLast())!)
        #expect(Int(cursors[1].dropFirst().dropLast())! > Int(cursors[0].dropFirst().dropLast())!, "the second launch went on from the first's batches: \(cursors)")
        #expect(!final.standardOutput.contains("library@1.1-1 (fill event guids) batch committed: 200 of"), "the final launch did not start the step over")
        #expect(try StoreSnapshot(of: directory) == expected)
    }

    @Test func aDirectoryHoldingOtherFilesIsRefused() throws {
        let directory = folder.file("foreign")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data("mine".utf8).write(to: directory.appendingPathComponent("notes.txt"))
        let exit = try runDemo(in: directory)
        #expect(exit.status == 2)
        #expect(exit.standardError.contains("holds files that are not the demo's (notes.txt)"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["notes.txt"])
    }
}

/// What the demo's stores hold, without what legitimately differs between two runs: the GUIDs
/// (random), the SQLite history's timestamps, and lock files.
struct StoreSnapshot: Equatable, CustomStringConvertible {
    var preferences: Preferences
    var records: [String: [String]]
    var schema: [String]
    var tables: [String: [String]]
    var thumbnails: [String]

    init(of directory: URL) throws {
        let preferencesStore = PreferencesStore(url: directory.appendingPathComponent("Preferences.json"))
        preferences = try preferencesStore.read()
        let database = SQLiteStore(url: directory.appendingPathComponent("Notes.sqlite"))
        let cache = CacheStore(directory: directory.appendingPathComponent("Thumbnails", isDirectory: true))
        records = [:]
        for (name, store) in [("preferences", preferencesStore as any MigrationStore), ("library", database), ("thumbnails", cache)] {
            let record = try store.readRecords()[name]
            records[name] = (record?.appliedVersions.map(\.description) ?? []) + ["baseline \(record?.baseline?.description ?? "none")"]
        }
        var schema: [String] = []
        var tables: [String: [String]] = [:]
        try database.read { db in
            let ownTables = [SQLiteStore.levelsTable, SQLiteStore.historyTable]
            for row in try db.rows("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name") {
                let type: String = try row[0], name: String = try row[1]
                guard !ownTables.contains(name) else { continue }
                schema.append("\(type) \(name): \(row.values[2])")
                guard type == "table" else { continue }
                var lines: [String] = []
                for tableRow in try db.rows("SELECT * FROM \"\(name)\" ORDER BY rowid") {
                    lines.append(zip(tableRow.columnNames, tableRow.values).map { column, value in
                        // GUIDs are random: only whether one is there, and (below) that they are unique.
                        column == "guid" ? "guid=\(value == .null ? "none" : "set")" : "\(column)=\(value)"
                    }.joined(separator: " "))
                }
                tables[name] = lines
                if try db.tableInfo(name).contains(where: { $0.name == "guid" }) {
                    let distinct = try db.scalar("SELECT count(DISTINCT guid) = count(guid) FROM \"\(name)\"", as: Int.self)
                    tables[name]?.append("guids unique: \(distinct == 1)")
                }
            }
        }
        self.schema = schema
        self.tables = tables
        thumbnails = try FileManager.default.contentsOfDirectory(atPath: cache.directory.path).sorted()
    }

    var description: String {
        "preferences \(preferences.values)\nrecords \(records)\nschema \(schema)\nthumbnails \(thumbnails)\n"
            + tables.keys.sorted().map { "\($0): \(tables[$0]!.count) rows, first \(tables[$0]!.prefix(2))" }.joined(separator: "\n")
    }
}
