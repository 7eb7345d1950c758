import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// The README's quick start, as written there, on real files.
@Suite struct ReadmeTests {
    @Test func quickStartRuns() throws {
        let folder = try TemporaryFolder()
        let prefsURL = folder.file("prefs.json"), dbURL = folder.file("library.sqlite"), cacheURL = folder.file("thumbnails")
        try Data(#"{"showHelp": true}"#.utf8).write(to: prefsURL)
        try SQLiteStore(url: dbURL).write { db in try db.execute("CREATE TABLE event(id INTEGER PRIMARY KEY)") }

        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let prefs = try coordinator.manager("preferences", store: PreferencesStore(url: prefsURL))
        let library = try coordinator.manager("library", store: SQLiteStore(url: dbURL))
        let thumbs = try coordinator.manager("thumbnails", store: CacheStore(directory: cacheURL))

        prefs.register("1.1") { defaults in try defaults.renameKey("showHelp", to: "onboarding.showHelp") }
        library.register("1.1") { db in try db.addColumn("guid", type: .text, to: "event") }
        library.register("2.0", dependsOn: [prefs.migration("1.1")]) { _ in }
        thumbs.register("2.0") { cache in try cache.removeAll() }

        let plan = try coordinator.plan()
        #expect(plan.steps.map(\.id.description) == ["preferences@1.1", "library@1.1", "thumbnails@2.0", "library@2.0"])
        let report = try coordinator.run()
        #expect(report.succeeded && report.didRunAnything)
        #expect(try PreferencesStore(url: prefsURL).read().bool("onboarding.showHelp") == true)
        #expect(try SQLiteStore(url: dbURL).read { db in try db.tableInfo("event").map(\.name) } == ["id", "guid"])
    }

    /// The README's and `MigrationRunHandle`'s sample: events and the snapshot with no state box,
    /// in Swift 6 mode, as written there (`print` collects the lines).
    @Test func runHandleEventsNeedNoStateOfOurOwn() async throws {
        let folder = try TemporaryFolder()
        let coordinator = MigrationCoordinator(appVersion: "2.0")
        let library = try coordinator.manager("library", store: SQLiteStore(url: folder.file("library.sqlite")))
        library.register("1.1") { db, context in
            try db.execute("CREATE TABLE event(id INTEGER PRIMARY KEY)")
            context.reportProgress(0.45)
        }
        library.register("2.0") { db in try db.addColumn("guid", type: .text, to: "event") }
        var lines: [String] = []
        func print(_ items: Any...) { lines.append(items.map { "\($0)" }.joined(separator: " ")) }

        let handle = coordinator.run { _ in }
        for await event in handle.events {
            print(event, handle.snapshot)   // library@2.0: 45% 3 of 8 steps ended (41%); running library@2.0 (45%)
        }
        let report = try await handle.report()

        #expect(report.succeeded)
        #expect(lines.count == 6)
        #expect(lines.first?.hasPrefix("planned 2 steps ") == true)
        // The snapshot is read as the loop gets to an event: the run may be further on by then.
        #expect(lines.contains { $0.hasPrefix("library@1.1: 45% ") && $0.contains(" of 2 steps ended ") })
        #expect(lines.last?.hasPrefix("library@2.0: finished in ") == true)

        // `MigrationRunSnapshot`'s sample: polling from a task.
        let again = coordinator.run { _ in }
        while !again.snapshot.isFinished {
            print(again.snapshot)   // 3 of 8 steps ended (41%); running library@2.0 (30%)
            try await Task.sleep(for: .seconds(1))
        }
        #expect(again.snapshot.description == "0 of 0 steps ended (100%); finished")
    }
}

/// The README's custom store, as written there.
final class SettingsServiceStore: MigrationStore {
    let service: SettingsService                     // your client: locking, reading, one atomic save
    init(service: SettingsService) { self.service = service }

    var description: String { "settings service \(service.name)" }
    var identity: StoreIdentity { StoreIdentity(kind: "settings-service", value: service.name) }

    func readRecords() throws -> [String: MigrationRecord] {
        try service.load().records                   // read only: no lock, nothing created
    }

    func transaction<T>(
        _ request: TransactionRequest, _ body: (inout [String: MigrationRecord], inout [String: String]) throws -> T
    ) throws -> T {
        try service.withExclusiveLock {              // across threads and processes
            var (values, records) = try service.load()
            let result = try body(&records, &values) // throws: nothing is saved
            try service.save(values, records)        // values and records in one atomic write
            return result
        }
    }
}

/// The service the README's store talks to: here, values kept in memory behind a lock.
final class SettingsService: @unchecked Sendable {
    // @unchecked: `values`, `records` and `saves` are only touched with `lock` held, which
    // `withExclusiveLock` holds for the length of a transaction (recursively, for load and save).
    let name: String
    private let lock = NSRecursiveLock()
    private var values: [String: String]
    private var records: [String: MigrationRecord] = [:]
    private(set) var saves = 0

    init(name: String, values: [String: String]) {
        self.name = name
        self.values = values
    }

    func load() throws -> (values: [String: String], records: [String: MigrationRecord]) {
        lock.withLock { (values, records) }
    }

    func save(_ values: [String: String], _ records: [String: MigrationRecord]) throws {
        lock.withLock {
            self.values = values
            self.records = records
            saves += 1
        }
    }

    func withExclusiveLock<T>(_ body: () throws -> T) throws -> T {
        try lock.withLock(body)
    }
}

@Suite struct ReadmeCustomStoreTests {
    @Test func theReadmesCustomStoreMigratesOnceAndRecords() throws {
        let service = SettingsService(name: "com.example.settings", values: ["theme": "dark"])
        func launch() throws -> MigrationReport {
            let coordinator = MigrationCoordinator(appVersion: "2.0")
            let settings = try coordinator.manager("settings", store: SettingsServiceStore(service: service))
            settings.register("1.1") { values in values["appearance.theme"] = values.removeValue(forKey: "theme") }
            settings.register("2.0") { values in values["version"] = "2" }
            return try coordinator.run()
        }
        let first = try launch()
        #expect(first.steps.map(\.outcome) == [.applied, .applied])
        #expect(try service.load().values == ["appearance.theme": "dark", "version": "2"])
        #expect(try service.load().records["settings"]?.appliedVersions == ["1.1", "2.0"])

        let savesAfterFirst = service.saves
        let second = try launch()
        #expect(second.steps.isEmpty && !second.didRunAnything)
        #expect(service.saves == savesAfterFirst, "an up-to-date launch saves nothing")
    }

    @Test func aThrowingBodySavesNothing() throws {
        let service = SettingsService(name: "s", values: ["a": "1"])
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        let settings = try coordinator.manager("settings", store: SettingsServiceStore(service: service))
        settings.register("1.0") { values in
            values["a"] = "2"
            throw SimulatedBodyFailure()
        }
        #expect(throws: MigrationRunError.self) { try coordinator.run() }
        #expect(try service.load().values == ["a": "1"])
        #expect(try service.load().records.isEmpty)
        #expect(service.saves == 0)
    }

    /// "Writing a Store", Testing a store: a transaction called directly, as the article shows.
    @Test func aStoreIsTestedThroughARequestAndAContextMadeByHand() throws {
        let store = SettingsServiceStore(service: SettingsService(name: "s", values: [:]))
        let request = TransactionRequest(migration: .migration(manager: "settings", version: "2.0"))
        let level = try store.transaction(request) { records, values in
            values["theme"] = "dark"
            records["settings"] = MigrationRecord(applied: [AppliedMigration(version: "2.0")])
            return records["settings"]?.level
        }
        #expect(level == "2.0")
        #expect(try store.readRecords()["settings"]?.isApplied("2.0") == true)
        #expect(try store.service.load().values == ["theme": "dark"])
        let context = MigrationContext(manager: "settings", version: "2.0")
        try context.checkCancellation()
        #expect(!request.isBatch && context.version == "2.0")
    }
}

/// The docs agree with the package on what a new user installs (issue 28, item 13).
@Suite struct PackageDocsTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    @Test func everyPageCountsTheLibraryProductsThePackageHas() throws {
        let manifest = try Self.text("Package.swift")
        let products = manifest.components(separatedBy: ".library(name: \"").dropFirst()
            .map { $0.prefix { $0 != "\"" } }
            .filter { !$0.hasSuffix("Testing") }
        #expect(products.count == 4, "\(products)")
        for page in ["README.md", "Sources/StoreMigrations/README.md", "Sources/StoreMigrations/StoreMigrations.docc/GettingStarted.md"] {
            let text = try Self.text(page).lowercased()
            #expect(text.contains("four library products"), "\(page)")
            #expect(!text.contains("three library products"), "\(page)")
            for product in products { #expect(text.contains("`\(product.lowercased())`"), "\(page) leaves out \(product)") }
        }
    }

    @Test func theFirstRequirementsAskOnlyWhatTheCoreNeeds() throws {
        let readme = try Self.text("README.md")
        let requirements = try #require(readme.components(separatedBy: "Requirements:").dropFirst().first?
            .components(separatedBy: "\n\n").first)
        let firstSentence = requirements.prefix { $0 != "." }
        #expect(!firstSentence.contains("libpq") && !firstSentence.contains("SQLite"), "\(firstSentence)")
        #expect(requirements.contains("The core product, `StoreMigrations`, needs\nnothing else"))
    }

    @Test func theManifestCountsTheDemosStores() throws {
        let manifest = try Self.text("Package.swift")
        let migrations = try Self.text("Sources/Demo/NotesApp/NotesMigrations.swift")
        let stores = migrations.components(separatedBy: "try coordinator.manager(").count - 1
        #expect(stores == 3)
        #expect(manifest.contains("`swift run demo`: an app's three stores"))
    }

    /// Item 6: SwiftPM looks up the pkg-config file of every system library in the graph, even
    /// one nothing builds; on Linux CLibPQ declares none, so an app using only the core is not
    /// told to install libpq.
    @Test func onLinuxLibPQDeclaresNoPkgConfigLookup() throws {
        let manifest = try Self.text("Package.swift")
        let linux = try #require(manifest.components(separatedBy: "#if os(Linux)").dropFirst().first?
            .components(separatedBy: "#else").first)
        #expect(linux.contains(#".systemLibrary(name: "CLibPQ")"#), "\(linux)")
        #expect(!linux.contains("pkgConfig") && !linux.contains("providers"), "\(linux)")
        #expect(manifest.components(separatedBy: #"name: "CLibPQ""#).count == 3, "declared once a platform")
    }
}
