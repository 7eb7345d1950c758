import Dispatch
import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

// The code samples of the DocC article *Large Migrations*
// (Sources/StoreMigrations/StoreMigrations.docc/LargeMigrations.md) and of the README's "Large
// migrations" section, as written there, run on real files. A sample that changes in the
// article changes here too. What a sample leaves to the app (`log`, `showApp`,
// `moveAttachments`, the iOS frameworks of the background-task recipe) is defined here.

/// The notes app of the article, as version 2.0 left it: a database whose `note` table has
/// `notes` rows (every fourth with an attachment), and a preferences file.
struct NotesAppVersion2 {
    let folder: TemporaryFolder
    let notes: Int
    var dbURL: URL { folder.file("notes.sqlite") }
    var prefsURL: URL { folder.file("preferences.json") }
    var dotURL: URL { folder.file("plan.dot") }

    init(notes: Int = 20_000) throws {
        folder = try TemporaryFolder()
        self.notes = notes
        try Data(#"{"onboarding": {"showHelp": false}}"#.utf8).write(to: prefsURL)
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let library = try coordinator.manager("library", store: SQLiteStore(url: dbURL))
        library.register("2.0") { db in
            try db.execute("CREATE TABLE note(id INTEGER PRIMARY KEY, title TEXT, body TEXT, attachment BLOB)")
            let insert = try db.prepare("INSERT INTO note(title, body, attachment) VALUES (?, ?, ?)")
            for number in 1...notes {
                try insert.execute(arguments: [
                    .text("Note \(number)"), .text("Body of Note \(number)"),
                    number % 4 == 0 ? .blob(Data([UInt8(number % 256), 1, 2, 3])) : .null,
                ])
            }
        }
        try coordinator.run()
        library.store.close()
    }

    func scalar<T: DatabaseValueConvertible>(_ sql: String, as type: T.Type = T.self) throws -> T? {
        let store = SQLiteStore(url: dbURL)
        defer { store.close() }
        return try store.read { db in try db.scalar(sql, as: T.self) }
    }

    /// The article's set-up: a coordinator for 3.0 with the preferences and library managers.
    func coordinator() throws -> (MigrationCoordinator, MigrationManager<PreferencesStore>, MigrationManager<SQLiteStore>) {
        let prefsURL = prefsURL, dbURL = dbURL

        let coordinator = MigrationCoordinator(appVersion: "3.0")
        let prefs = try coordinator.manager(
            "preferences", store: PreferencesStore(url: prefsURL))
        let library = try coordinator.manager(
            "library", store: SQLiteStore(url: dbURL))

        return (coordinator, prefs, library)
    }
}

/// The article's `3.0`: the schema changes, in an ordinary migration.
func registerSchema(_ library: MigrationManager<SQLiteStore>) {
    library.register("3.0") { db in
        try db.addColumn("guid", type: .text, to: "note")
        try db.addColumn("search_text", type: .text, to: "note")
        try db.execute("""
            CREATE TABLE attachment(
                id INTEGER PRIMARY KEY, note_id INTEGER NOT NULL, data BLOB NOT NULL)
            """)
    }
}

/// The article's `3.0-1`, as written there.
func registerGUIDs(_ library: MigrationManager<SQLiteStore>) {
    library.registerResumable(
        "3.0-1", transformingRowsOf: "note", columns: ["guid"], where: "guid IS NULL"
    ) { _ in
        ["guid": .text(UUID().uuidString)]
    }
}

/// The article's `3.0-2` body, as written there; `moveAttachments` in the other samples.
func moveAttachments(_ db: Database, _ batch: BatchRequest) throws -> BatchResult {
    let after = batch.cursor.flatMap(Int64.init) ?? 0
    let total = try batch.total ?? db.scalar(
        "SELECT count(*) FROM note WHERE attachment IS NOT NULL", as: Int.self)
    let notes = try db.rows("""
        SELECT id FROM note WHERE id > ? AND attachment IS NOT NULL
        ORDER BY id LIMIT ?
        """, arguments: [.integer(after), .integer(Int64(batch.limit))])
    for note in notes {
        let id: Int64 = try note["id"]
        try db.execute("""
            INSERT INTO attachment(note_id, data)
            SELECT id, attachment FROM note WHERE id = ?
            """, arguments: [.integer(id)])
        try db.execute(
            "UPDATE note SET attachment = NULL WHERE id = ?", arguments: [.integer(id)])
    }
    guard notes.count == batch.limit, let last = notes.last else {
        return .finished(processed: notes.count)
    }
    let lastID: Int64 = try last["id"]
    return .more(cursor: String(lastID), processed: notes.count, total: total)
}

/// The article's `3.0-3`, as written there.
func registerSearchText(_ library: MigrationManager<SQLiteStore>) {
    library.registerResumable(
        "3.0-3", transformingRowsOf: "note", columns: ["body", "search_text"],
        where: "search_text IS NULL", deferred: true
    ) { row in
        let body: String? = try row["body"]
        return ["search_text": .text(body?.lowercased() ?? "")]
    }
}

@Suite struct LargeMigrationsArticleTests {
    /// *Make a migration resumable*: the schema step, the SQLite shorthand and a body of one's
    /// own, in one launch.
    @Test func theResumableSamplesMigrateEveryNoteOnce() throws {
        let app = try NotesAppVersion2()
        let (coordinator, _, library) = try app.coordinator()
        let cursors = Locked<[String: [String]]>([:])
        coordinator.observer = { event in
            if case let .batchCommitted(step, progress) = event {
                cursors.value[step.id.description, default: []].append(progress.cursor)
            }
        }

        library.register("3.0") { db in
            try db.addColumn("guid", type: .text, to: "note")
            try db.addColumn("search_text", type: .text, to: "note")
            try db.execute("""
                CREATE TABLE attachment(
                    id INTEGER PRIMARY KEY, note_id INTEGER NOT NULL, data BLOB NOT NULL)
                """)
        }
        library.registerResumable(
            "3.0-1", transformingRowsOf: "note", columns: ["guid"], where: "guid IS NULL"
        ) { _ in
            ["guid": .text(UUID().uuidString)]
        }

        library.registerResumable("3.0-2") { db, batch in
            let after = batch.cursor.flatMap(Int64.init) ?? 0
            let total = try batch.total ?? db.scalar(
                "SELECT count(*) FROM note WHERE attachment IS NOT NULL", as: Int.self)
            let notes = try db.rows("""
                SELECT id FROM note WHERE id > ? AND attachment IS NOT NULL
                ORDER BY id LIMIT ?
                """, arguments: [.integer(after), .integer(Int64(batch.limit))])
            for note in notes {
                let id: Int64 = try note["id"]
                try db.execute("""
                    INSERT INTO attachment(note_id, data)
                    SELECT id, attachment FROM note WHERE id = ?
                    """, arguments: [.integer(id)])
                try db.execute(
                    "UPDATE note SET attachment = NULL WHERE id = ?", arguments: [.integer(id)])
            }
            guard notes.count == batch.limit, let last = notes.last else {
                return .finished(processed: notes.count)
            }
            let lastID: Int64 = try last["id"]
            return .more(cursor: String(lastID), processed: notes.count, total: total)
        }

        let report = try coordinator.run()
        #expect(report.steps.map(\.outcome) == [.applied, .applied, .applied])
        library.store.close()
        #expect(try app.scalar("SELECT count(*) FROM note WHERE guid IS NULL", as: Int.self) == 0)
        #expect(try app.scalar("SELECT count(DISTINCT guid) FROM note", as: Int.self) == app.notes)
        #expect(try app.scalar("SELECT count(*) FROM attachment", as: Int.self) == app.notes / 4, "each moved once")
        #expect(try app.scalar("SELECT count(DISTINCT note_id) FROM attachment", as: Int.self) == app.notes / 4)
        #expect(try app.scalar("SELECT count(*) FROM note WHERE attachment IS NOT NULL", as: Int.self) == 0)
        #expect(try app.scalar("SELECT min(note_id % 4) FROM attachment", as: Int.self) == 0)
        // Batches of 200, then growing with the measured rate: several commits per step, each
        // cursor past the one before.
        let moved = try #require(cursors.value["library@3.0-2"]).map { Int($0)! }
        #expect(moved.first == 800 && moved == moved.sorted() && Set(moved).count == moved.count)
        #expect(try #require(cursors.value["library@3.0-1"]).first == "[200]")
        #expect(try library.appliedMigrations() == ["2.0", "3.0", "3.0-1", "3.0-2"])
    }

    /// The mapped form: the attachments moved by a new schema, batch by batch.
    @Test func theMappedSampleMovesEveryAttachmentOnce() throws {
        let app = try NotesAppVersion2()
        let (coordinator, _, library) = try app.coordinator()
        let batches = Locked(0)
        coordinator.observer = { event in
            if case .batchCommitted = event { batches.value += 1 }
        }

        let notesV3: DeclaredSchema = [
            .table("note", primaryKey: ["id"], columns: [
                .column("id", .integer), .column("title", .text), .column("body", .text),
            ]),
            .table("attachment", primaryKey: ["id"], columns: [
                .column("id", .integer), .column("note_id", .integer, notNull: true),
                .column("data", .blob, notNull: true),
            ]),
        ]
        library.registerResumable("3.0", migratingSchemaTo: notesV3, mappings: [
            EntityMapping(from: "note") { note, destination in
                try destination.insert(into: "note", [
                    "id": note["id"], "title": note["title"], "body": note["body"],
                ])
                let data: DatabaseValue = try note["attachment"]
                if data != .null {
                    try destination.insert(into: "attachment", ["note_id": note["id"], "data": data])
                }
            },
        ])

        let report = try coordinator.run()
        #expect(report.steps.map(\.outcome) == [.applied])
        library.store.close()
        #expect(batches.value >= 2, "the first batches are 200 rows, then growing")
        #expect(try app.scalar("SELECT count(*) FROM note", as: Int.self) == app.notes)
        #expect(try app.scalar("SELECT count(*) FROM attachment", as: Int.self) == app.notes / 4, "each moved once")
        #expect(try app.scalar("SELECT count(DISTINCT note_id) FROM attachment WHERE note_id % 4 = 0", as: Int.self) == app.notes / 4)
        #expect(try app.scalar("SELECT group_concat(name) FROM pragma_table_info('note')", as: String.self) == "id,title,body")
        #expect(try app.scalar("SELECT count(*) FROM sqlite_master WHERE name LIKE 'store_migrations_source%'", as: Int.self) == 0)
    }

    /// *What a batch may do*: a batch that creates an index is refused, naming the statement;
    /// the batch is rolled back.
    @Test func aBatchThatChangesTheSchemaIsRefused() throws {
        let app = try NotesAppVersion2(notes: 100)
        let (coordinator, _, library) = try app.coordinator()
        let printed = Locked<[String]>([])
        func print(_ item: Any) { printed.value.append("\(item)") }
        registerSchema(library)

        library.registerResumable("3.0-2") { db, batch in
            try db.execute("CREATE INDEX attachment_on_note ON attachment(note_id)")
            return try moveAttachments(db, batch)
        }

        do {
            try coordinator.run()
        } catch let error as MigrationRunError {
            if let refusal = error.underlyingError as? SQLiteStoreError,
               case .schemaChangeInBatch(let statement) = refusal.reason {
                print("refused in a batch: \(statement)")
                // refused in a batch: CREATE INDEX attachment_on_note ON attachment(note_id)
            }
        }

        #expect(printed.value == ["refused in a batch: CREATE INDEX attachment_on_note ON attachment(note_id)"])
        let again = try #require(throws: MigrationRunError.self) { try coordinator.run() }
        let refusal = try #require(again.underlyingError as? SQLiteStoreError)
        #expect(refusal.migration == library.migration("3.0-2"))
        #expect(refusal.description.contains("Make the change in an ordinary migration registered before it"))
        library.store.close()
        #expect(try app.scalar("SELECT count(*) FROM attachment", as: Int.self) == 0, "the batch was rolled back")
        #expect(try app.scalar("SELECT count(*) FROM sqlite_schema WHERE name = 'attachment_on_note'", as: Int.self) == 0)
    }

    /// *Choose a batch size*: a shorter time target, and a fixed count.
    @Test func batchSizesFollowTheirTargetOrCount() throws {
        let app = try NotesAppVersion2(notes: 2_000)
        let (coordinator, _, library) = try app.coordinator()
        let done = Locked<[String: [Int]]>([:])
        coordinator.observer = { event in
            if case let .batchCommitted(step, progress) = event {
                done.value[step.id.description, default: []].append(progress.done)
            }
        }
        registerSchema(library)

        library.registerResumable(
            "3.0-1", transformingRowsOf: "note", columns: ["guid"], where: "guid IS NULL",
            batchSize: .timeTarget(.milliseconds(50), initial: 100)
        ) { _ in
            ["guid": .text(UUID().uuidString)]
        }
        library.registerResumable("3.0-2", batchSize: .fixed(20)) { db, batch in
            try moveAttachments(db, batch)   // the body above
        }

        #expect(try coordinator.run().succeeded)
        #expect(done.value["library@3.0-1"]?.first == 100)
        #expect(done.value["library@3.0-2"] == Array(stride(from: 20, through: 500, by: 20)), "500 attachments, 20 a batch")
        library.store.close()
        #expect(try app.scalar("SELECT count(*) FROM attachment", as: Int.self) == 500)
        #expect(try app.scalar("SELECT count(*) FROM note WHERE guid IS NULL", as: Int.self) == 0)
    }

    /// *See how far it has got*: the plan's text, JSON and DOT, the record, the events.
    @Test func progressShowsInThePlanTheRecordAndTheEvents() throws {
        let app = try NotesAppVersion2()
        let dotURL = app.dotURL
        let printed = Locked<[String]>([])
        func print(_ items: Any...) { printed.value.append(items.map { "\($0)" }.joined(separator: " ")) }
        let logged = Locked<[String]>([])
        @Sendable func log(_ line: String) { logged.value.append(line) }
        let shown = Locked<[String]>([])
        func showProgress(_ fraction: Double?, timeLeft: TimeInterval?) {
            shown.value.append("\(fraction.map { Int($0 * 100) } ?? -1)% \(timeLeft != nil)")
        }

        // A launch whose budget stopped 3.0-1 after its first batch; 3.0-2 waits for it.
        do {
            let (coordinator, _, library) = try app.coordinator()
            coordinator.deferredWork = .manual
            registerSchema(library)
            registerGUIDs(library)
            library.registerResumable("3.0-2") { db, batch in try moveAttachments(db, batch) }

            coordinator.observer = { event in
                switch event {
                case let .batchCommitted(step, progress):
                    log("\(step.id): \(progress)")
                case let .postponed(step, progress):
                    log("\(step.id) goes on later: \(progress?.description ?? "deferred")")
                default:
                    break
                }
            }

            let report = try coordinator.run(launchBudget: .zero)
            #expect(report.steps.map(\.outcome.description) == ["applied", "inProgress", "deferred"])
            library.store.close()
        }
        #expect(logged.value.count == 3)
        #expect(logged.value[0].hasPrefix("library@3.0-1: 3.0-1: 1% (200 of 20000) in 1 batch, resumes after [200]"))
        #expect(logged.value[1].hasPrefix("library@3.0-1 goes on later: 3.0-1: 1% (200 of 20000) in 1 batch"))
        #expect(logged.value[2] == "library@3.0-2 goes on later: deferred")

        let (coordinator, _, library) = try app.coordinator()
        registerSchema(library)
        registerGUIDs(library)
        library.registerResumable("3.0-2") { db, batch in try moveAttachments(db, batch) }

        let plan = try coordinator.plan()
        print(plan)
        let json = try JSONEncoder().encode(plan)
        try plan.graphviz().write(to: dotURL, atomically: true, encoding: .utf8)

        if let progress = try library.record().progress(of: "3.0-1") {
            showProgress(progress.fractionDone, timeLeft: progress.estimatedTimeLeft)
        }

        let text = try #require(printed.value.first)
        #expect(text.hasPrefix("Migration plan to app version 3.0: 2 steps in 2 waves."))
        #expect(text.contains("library (SQLite database \(app.dbURL.path)): level 3.0, pending 3.0-1, 3.0-2\n"))
        let inProgress = try #require(text.split(separator: "\n").first { $0.contains("in progress") })
        #expect(inProgress.hasPrefix("    in progress 3.0-1: 1% (200 of 20000) in 1 batch, resumes after [200], about "))
        #expect(inProgress.hasSuffix(" s left"))
        let decoded = try JSONSerialization.jsonObject(with: json) as? [String: Any]
        let managers = try #require(decoded?["managers"] as? [[String: Any]])
        let progress = try #require((managers.first { $0["name"] as? String == "library" }?["inProgress"]) as? [[String: Any]])
        #expect(progress.first?["cursor"] as? String == "[200]" && progress.first?["done"] as? Int == 200)
        #expect(progress.first?["total"] as? Int == 20_000)
        #expect(try String(contentsOf: dotURL, encoding: .utf8).contains(#""library@3.0-1" [label="library@3.0-1\n1% done"];"#))
        #expect(shown.value == ["1% true"])
    }

    /// *Keep the launch short*: a budget stops 3.0-1 between batches; the rest goes on in the
    /// background, resuming after the last committed batch.
    @Test func aLaunchBudgetStopsBetweenBatchesAndTheBackgroundFinishes() throws {
        let app = try NotesAppVersion2(notes: 10_000)
        let (coordinator, _, library) = try app.coordinator()
        let printed = Locked<[String]>([])
        func print(_ item: Any) { printed.value.append("\(item)") }
        registerSchema(library)
        // 3.0-1 with a transform that takes 1 ms a row at launch: 10 s in all, past the budget.
        let slow = Locked(true)
        let calls = Locked(0)
        library.registerResumable(
            "3.0-1", transformingRowsOf: "note", columns: ["guid"], where: "guid IS NULL"
        ) { _ in
            calls.value += 1
            if slow.value { usleep(1_000) }
            return ["guid": .text(UUID().uuidString)]
        }
        library.registerResumable("3.0-2") { db, batch in try moveAttachments(db, batch) }

        let clock = ContinuousClock.now
        let report = try coordinator.run(launchBudget: .seconds(5))
        for step in report.postponed {
            print(step)
        }
        // library@3.0-1: in progress in 5.23 s, 3.0-1: 43% (430000 of 1000000) in 21 batches, …
        // library@3.0-2: deferred to the background
        slow.value = false

        // The budget let the launch run until it was spent, and stopped the step before its end.
        #expect(ContinuousClock.now - clock >= .seconds(5))
        #expect(calls.value < 10_000)
        #expect(report.succeeded)
        #expect(report.steps.map(\.outcome.description) == ["applied", "inProgress", "deferred"])
        #expect(printed.value.count == 2)
        #expect(printed.value.first?.hasPrefix("library@3.0-1: in progress in ") == true)
        #expect(printed.value.first?.contains(" of 10000) in ") == true)
        #expect(printed.value.first?.hasSuffix("; resumes later") == true)
        #expect(printed.value.last == "library@3.0-2: deferred to the background")
        // The default deferred work: a background run started as run() returned.
        let background = try #require(coordinator.backgroundRun).wait()
        #expect(background.steps.map(\.outcome) == [.applied, .applied])
        #expect(calls.value == app.notes, "every row transformed once")
        library.store.close()
        #expect(try app.scalar("SELECT count(*) FROM note WHERE guid IS NULL", as: Int.self) == 0)
        #expect(try app.scalar("SELECT count(*) FROM attachment", as: Int.self) == app.notes / 4)
    }

    /// *Defer a migration past the launch*: run() returns without it; the background run is
    /// paused, resumed and cancelled between batches; the next launch resumes it.
    @Test func aDeferredMigrationGoesOnInTheBackground() throws {
        let app = try NotesAppVersion2()
        let firstBatch = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        do {
            let (coordinator, _, library) = try app.coordinator()
            registerSchema(library)
            // Holds the background run's first batch until the sample has paused the run, so
            // that the pause is seen before the second batch.
            coordinator.observer = { event in
                guard case let .batchCommitted(_, progress) = event, progress.batches == 1 else { return }
                firstBatch.signal()
                gate.wait()
            }

            library.registerResumable(
                "3.0-3", transformingRowsOf: "note", columns: ["body", "search_text"],
                where: "search_text IS NULL", deferred: true
            ) { row in
                let body: String? = try row["body"]
                return ["search_text": .text(body?.lowercased() ?? "")]
            }

            let plan = try coordinator.plan()
            #expect(plan.managers.map(\.deferred) == [[], ["3.0-3"]])
            #expect(plan.description.contains("pending 3.0, 3.0-3; deferred 3.0-3"))
            #expect(plan.graphviz().contains(#""library@3.0-3" [label="library@3.0-3\n(deferred)", style=dashed];"#))

            try coordinator.run()                        // returns without starting 3.0-3
            let background = coordinator.backgroundRun   // the run that goes on with it

            #expect(try library.appliedMigrations() == ["2.0", "3.0"])
            #expect(firstBatch.wait(timeout: .now() + 600) == .success)

            background?.pause()    // holds after the batch in flight commits
            gate.signal()
            #expect(background?.outcome == nil)
            #expect(try library.record().progress(of: "3.0-3")?.batches == 1, "held after its first batch")
            background?.resume()   // goes on from there
            background?.cancel()   // stops after the batch in flight; the next launch resumes

            let ended = Result { try background!.wait() }
            if case .failure(let error) = ended {
                #expect((error as? MigrationRunError)?.report.steps.map(\.outcome.description) == ["cancelled"])
            }
            library.store.close()
        }
        let left = try #require(try app.scalar("SELECT count(*) FROM note WHERE search_text IS NULL", as: Int.self))
        #expect(left < app.notes)

        // The next launch: the plan shows where it resumes, and its background run finishes it.
        let (coordinator, _, library) = try app.coordinator()
        registerSchema(library)
        registerSearchText(library)
        coordinator.deferredWork = .manual
        let launch = try coordinator.run()
        #expect(launch.steps.map(\.outcome.description) == (left > 0 ? ["deferred"] : []))
        #expect(try coordinator.runDeferred(queue: DispatchQueue(label: "test")).wait().succeeded)
        library.store.close()
        #expect(try app.scalar("SELECT count(*) FROM note WHERE search_text IS NULL", as: Int.self) == 0)
        #expect(try app.scalar("SELECT search_text FROM note WHERE id = 7", as: String.self) == "body of note 7")
    }

    /// *Dependents of deferred migrations*: `.wait` defers the preferences step too;
    /// `.finishInline` runs both at launch.
    @Test(arguments: [DependentsOfDeferredPolicy.wait, .finishInline])
    func aDependentOfADeferredMigration(policy: DependentsOfDeferredPolicy) throws {
        let app = try NotesAppVersion2(notes: 2_000)
        let (coordinator, prefs, library) = try app.coordinator()
        coordinator.deferredWork = .manual
        registerSchema(library)
        registerSearchText(library)

        prefs.register("3.0", dependsOn: [library.migration("3.0-3")]) { defaults in
            try defaults.set(true, for: "search.usesSearchText")
        }

        if policy == .finishInline {
            coordinator.dependentsOfDeferred = .finishInline   // the launch builds the search text first
        }

        let plan = try coordinator.plan()
        let launch = try coordinator.run()
        if policy == .wait {
            #expect(plan.managers.map(\.deferred) == [["3.0"], ["3.0-3"]])
            #expect(launch.postponed.map(\.step.id.description) == ["library@3.0-3", "preferences@3.0"])
            #expect(try PreferencesStore(url: app.prefsURL).read().bool("search.usesSearchText") == nil)
            let background = try coordinator.runDeferred(queue: DispatchQueue(label: "test")).wait()
            #expect(background.steps.map(\.step.id.description) == ["library@3.0-3", "preferences@3.0"])
        } else {
            #expect(plan.managers.map(\.deferred) == [[], []])
            #expect(launch.steps.map(\.outcome) == [.applied, .applied, .applied])
        }
        #expect(try PreferencesStore(url: app.prefsURL).read().bool("search.usesSearchText") == true)
        library.store.close()
        #expect(try app.scalar("SELECT count(*) FROM note WHERE search_text IS NULL", as: Int.self) == 0)
    }

    /// The article's advice: a deferred migration in a manager of its own on the same store
    /// does not hold back the next release's migrations of the library.
    @Test func aDeferredMigrationInAManagerOfItsOwnHoldsBackNoLaterMigration() throws {
        let app = try NotesAppVersion2(notes: 100)
        let dbURL = app.dbURL
        let coordinator = MigrationCoordinator(appVersion: "3.1")
        coordinator.deferredWork = .manual
        let library = try coordinator.manager("library", store: SQLiteStore(url: dbURL))
        let search = try coordinator.manager("library-search", store: SQLiteStore(url: dbURL))
        registerSchema(library)
        library.register("3.1") { db in try db.addColumn("pinned", type: .integer, to: "note") }
        search.registerResumable(
            "3.0", dependsOn: [library.migration("3.0")], transformingRowsOf: "note",
            columns: ["body", "search_text"], where: "search_text IS NULL", deferred: true
        ) { row in
            let body: String? = try row["body"]
            return ["search_text": .text(body?.lowercased() ?? "")]
        }
        #expect(try coordinator.plan().managers.map(\.deferred) == [[], ["3.0"]])
        let launch = try coordinator.run()
        #expect(launch.postponed.map(\.step.id.description) == ["library-search@3.0"])
        #expect(try library.appliedMigrations() == ["2.0", "3.0", "3.1"])
        library.store.close()
        search.store.close()
    }
}

extension LargeMigrationsArticleTests {
    /// *Run deferred work in an iOS background task*: the recipe's fragments, called as iOS
    /// would. The run started in the foreground pauses when the app leaves it and resumes when it
    /// comes back; the first task cancels it and expires after one batch (scheduled again); the
    /// second finishes the migration.
    @Test func theBackgroundTaskRecipeResumesAcrossTasks() throws {
        let app = try NotesAppVersion2()
        let (coordinator, _, library) = try app.coordinator()
        registerSchema(library)
        registerSearchText(library)
        let scheduler = BGTaskScheduler.shared
        scheduler.reset()
        let firstTask = BGTask(), secondTask = BGTask()

        // What happens after each batch of 3.0-3, in order.
        let leftForeground = DispatchSemaphore(value: 0)
        let batches = Locked(0)
        coordinator.observer = { event in
            guard case let .batchCommitted(step, _) = event, step.version == "3.0-3" else { return }
            // Called on the step's thread, one batch after the other.
            batches.value += 1
            switch batches.value {
            case 1, 2:
                // Before the run asks whether to go on: the pause holds it after this batch.
                applicationDidEnterBackground(coordinator)
                leftForeground.signal()
            case 3:
                firstTask.expire()
            default:
                break
            }
        }
        let shown = Locked<[Result<MigrationReport, any Error>]>([])
        let launched = DispatchSemaphore(value: 0)
        didFinishLaunching(UIApplication(applicationState: .inactive), coordinator) { result in
            shown.value.append(result)
            launched.signal()
        }
        #expect(launched.wait(timeout: .now() + 600) == .success)
        let launch = try #require(try shown.value.first?.get())
        #expect(launch.postponed.map(\.step.id.description) == ["library@3.0-3"])

        #expect(leftForeground.wait(timeout: .now() + 600) == .success)
        let foreground = try #require(coordinator.backgroundRun)
        #expect(foreground.outcome == nil)
        #expect(try library.record().progress(of: "3.0-3")?.batches == 1)
        applicationWillEnterForeground(coordinator)
        #expect(leftForeground.wait(timeout: .now() + 600) == .success)
        #expect(try library.record().progress(of: "3.0-3")?.batches == 2)

        scheduler.launch(migrationTask, task: firstTask)
        #expect(firstTask.completion.wait(timeout: .now() + 600) == .success)
        #expect(firstTask.success.value == false)
        #expect(try library.record().progress(of: "3.0-3")?.batches == 3, "the task stopped after its batch")
        if case .failure(let error)? = foreground.outcome {
            #expect((error as? MigrationRunError)?.report.steps.map(\.outcome.description) == ["cancelled"])
        } else {
            Issue.record("the foreground run was not cancelled: \(String(describing: foreground.outcome))")
        }

        scheduler.launch(migrationTask, task: secondTask)
        #expect(secondTask.completion.wait(timeout: .now() + 600) == .success)
        #expect(secondTask.success.value == true)
        // Scheduled when the launch left work, each time the app left the foreground, and
        // again when the first task expired.
        #expect(scheduler.submitted.value == Array(repeating: migrationTask, count: 4))
        #expect(try library.appliedMigrations() == ["2.0", "3.0", "3.0-3"])
        library.store.close()
        #expect(try app.scalar("SELECT count(*) FROM note WHERE search_text IS NULL", as: Int.self) == 0)
        #expect(try app.scalar("SELECT count(*) FROM note WHERE search_text <> lower(body)", as: Int.self) == 0)
    }

    /// *What a deferred migration's body must tolerate*: the app inserts notes in the new shape
    /// and searches both shapes between batches; every note ends with its search text.
    @Test func theAppWritesAndReadsWhileADeferredMigrationRuns() throws {
        let app = try NotesAppVersion2()
        let dbURL = app.dbURL
        let (coordinator, _, library) = try app.coordinator()
        coordinator.deferredWork = .manual
        registerSchema(library)
        registerGUIDs(library)
        registerSearchText(library)
        #expect(try coordinator.run().postponed.map(\.step.id.description) == ["library@3.0-3"])

        let batchDone = DispatchSemaphore(value: 0)
        let goOn = DispatchSemaphore(value: 0)
        let holding = Locked(true)
        coordinator.observer = { event in
            guard case .batchCommitted = event, holding.value else { return }
            batchDone.signal()
            goOn.wait()
        }
        let background = coordinator.runDeferred(queue: DispatchQueue(label: "test"))

        let store = SQLiteStore(url: dbURL)   // the app's own connection
        for (title, body) in [("Groceries", "Milk, EGGS"), ("Ideas", "Eggs benedict")] {
            #expect(batchDone.wait(timeout: .now() + 600) == .success)

            try store.write { db in
                try db.execute(
                    "INSERT INTO note(title, body, guid, search_text) VALUES (?, ?, ?, ?)",
                    arguments: [.text(title), .text(body), .text(UUID().uuidString),
                                .text(body.lowercased())])
            }

            goOn.signal()
        }
        #expect(batchDone.wait(timeout: .now() + 600) == .success)
        // Between two batches: notes done, notes not reached yet, and the app's own.
        let query = "NOTE 1"

        let found = try store.read { db in
            try db.rows("""
                SELECT id FROM note
                WHERE search_text LIKE ?1 OR (search_text IS NULL AND body LIKE ?1)
                """, arguments: [.text("%\(query.lowercased())%")])
        }

        let pending = try store.read { db in
            try db.scalar("SELECT count(*) FROM note WHERE search_text IS NULL", as: Int.self)
        }
        #expect(try #require(pending) > 0, "the migration is half done")
        let expected = try store.read { db in
            try db.scalar("SELECT count(*) FROM note WHERE body LIKE '%note 1%'", as: Int.self)
        }
        #expect(found.count == expected && found.count > 1_000)
        let eggs = try store.read { db in
            try db.rows("SELECT id FROM note WHERE search_text LIKE '%eggs%'").count
        }
        #expect(eggs == 2)
        holding.value = false
        goOn.signal()
        #expect(try background.wait().succeeded)
        store.close()
        library.store.close()
        #expect(try app.scalar("SELECT count(*) FROM note", as: Int.self) == app.notes + 2)
        #expect(try app.scalar("SELECT count(*) FROM note WHERE search_text IS NULL OR guid IS NULL", as: Int.self) == 0)
        #expect(try app.scalar("SELECT count(*) FROM note WHERE search_text <> lower(body)", as: Int.self) == 0)
    }

    /// The README's "Large migrations" sample.
    @Test func theReadmeSampleDefersTheTransformAndPauses() throws {
        let app = try NotesAppVersion2()
        let (coordinator, _, library) = try app.coordinator()

        library.register("3.0") { db in try db.addColumn("guid", type: .text, to: "note") }
        library.registerResumable(
            "3.0-1", transformingRowsOf: "note", columns: ["guid"], where: "guid IS NULL",
            deferred: true
        ) { _ in
            ["guid": .text(UUID().uuidString)]
        }
        let report = try coordinator.run()   // returns before 3.0-1 starts
        coordinator.backgroundRun?.pause()   // in applicationDidEnterBackground

        #expect(report.steps.map(\.outcome.description) == ["applied", "deferred"])
        let background = try #require(coordinator.backgroundRun)
        background.resume()
        #expect(try background.wait().steps.map(\.outcome) == [.applied])
        library.store.close()
        #expect(try app.scalar("SELECT count(DISTINCT guid) FROM note", as: Int.self) == app.notes)
    }
}

// The recipe's fragments, as written in the article, each in the app delegate's method it names.

private let migrationTask = "com.example.notes.migrations"

/// In `application(_:didFinishLaunchingWithOptions:)`.
private func didFinishLaunching(
    _ application: UIApplication, _ coordinator: MigrationCoordinator,
    showApp: @escaping @Sendable (Result<MigrationReport, any Error>) -> Void
) {
    coordinator.deferredWork = .manual
    BGTaskScheduler.shared.register(forTaskWithIdentifier: migrationTask, using: nil) { task in
        coordinator.backgroundRun?.cancel()   // a run paused when the app left the foreground
        let handle = coordinator.runDeferred { result in
            let finished = (try? result.get()) != nil
            if !finished { scheduleMigrations() }   // the next task resumes after the last batch
            task.setTaskCompleted(success: finished)
        }
        task.expirationHandler = { handle.cancel() }   // stops after the current batch
    }
    let inForeground = application.applicationState != .background
    coordinator.run(launchBudget: .seconds(5)) { result in
        showApp(result)
        guard case .success(let report) = result, !report.postponed.isEmpty else { return }
        scheduleMigrations()
        if inForeground { coordinator.runDeferred() }   // goes on while the app is in use
    }
}

private func scheduleMigrations() {
    let request = BGProcessingTaskRequest(identifier: migrationTask)
    try? BGTaskScheduler.shared.submit(request)
}

/// In `applicationDidEnterBackground(_:)`.
private func applicationDidEnterBackground(_ coordinator: MigrationCoordinator) {
    coordinator.backgroundRun?.pause()   // after its batch: no transaction open while suspended
    scheduleMigrations()
}

/// In `applicationWillEnterForeground(_:)`.
private func applicationWillEnterForeground(_ coordinator: MigrationCoordinator) {
    coordinator.backgroundRun?.resume()
}

// Stand-ins for what the recipe calls of UIKit and BackgroundTasks, which Linux does not have.

private final class UIApplication {
    enum State { case active, inactive, background }
    let applicationState: State
    init(applicationState: State) { self.applicationState = applicationState }
}

private final class BGProcessingTaskRequest {
    let identifier: String
    var requiresExternalPower = false
    init(identifier: String) { self.identifier = identifier }
}

/// A task: the test expires it (once its expiration handler is set, as iOS would) and waits for
/// its completion.
private final class BGTask: @unchecked Sendable {
    // @unchecked: `handler` is only touched with `lock` held.
    private let lock = NSLock()
    private var handler: (@Sendable () -> Void)?
    private let handlerSet = DispatchSemaphore(value: 0)
    let completion = DispatchSemaphore(value: 0)
    let success = Locked<Bool?>(nil)

    var expirationHandler: (@Sendable () -> Void)? {
        get { lock.withLock { handler } }
        set {
            lock.withLock { handler = newValue }
            handlerSet.signal()
        }
    }

    func setTaskCompleted(success: Bool) {
        self.success.value = success
        completion.signal()
    }

    func expire() {
        handlerSet.wait()
        expirationHandler?()
    }
}

private final class BGTaskScheduler: @unchecked Sendable {
    // @unchecked: `handlers` is only touched with `lock` held.
    static let shared = BGTaskScheduler()
    private let lock = NSLock()
    private var handlers: [String: @Sendable (BGTask) -> Void] = [:]
    let submitted = Locked<[String]>([])

    @discardableResult
    func register(
        forTaskWithIdentifier identifier: String, using queue: DispatchQueue?,
        launchHandler: @escaping @Sendable (BGTask) -> Void
    ) -> Bool {
        lock.withLock { handlers[identifier] = launchHandler }
        return true
    }

    func submit(_ request: BGProcessingTaskRequest) throws {
        submitted.value.append(request.identifier)
    }

    func reset() {
        lock.withLock { handlers = [:] }
        submitted.value = []
    }

    /// Starts the task, as iOS does, on a queue of its own.
    func launch(_ identifier: String, task: BGTask) {
        let handler = lock.withLock { handlers[identifier] }!
        DispatchQueue.global(qos: .utility).async { handler(task) }
    }
}

extension MigrationReport.Step.Outcome {
    /// The outcome's case name, for comparing lists of outcomes whose payloads vary.
    fileprivate var description: String {
        switch self {
        case .applied: return "applied"
        case .alreadyApplied: return "alreadyApplied"
        case .failed: return "failed"
        case .skipped: return "skipped"
        case .cancelled: return "cancelled"
        case .inProgress: return "inProgress"
        case .deferred: return "deferred"
        }
    }
}
