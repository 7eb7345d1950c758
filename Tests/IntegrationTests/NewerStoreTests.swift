import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// Stores written by a newer version of the app (a downgrade, or an old backup of the app over
/// new data), met by the real stores through the coordinator.
@Suite struct NewerStoreTests {
    let folder: TemporaryFolder
    let stores: ThreeStores

    init() throws {
        folder = try TemporaryFolder()
        stores = ThreeStores(root: folder.url)
        try stores.migrate(to: "1.0")
    }

    /// Records level 3.0 for `manager`, as app version 3.0 would have, and returns its store's
    /// description.
    func makeNewer(_ manager: String) throws -> String {
        switch manager {
        case "prefs":
            let store = PreferencesStore(url: stores.preferencesURL)
            try store.updateRecord(of: manager) { $0.setBaseline("3.0") }
            return store.description
        case "library":
            let store = SQLiteStore(url: stores.databaseURL)
            try store.updateRecord(of: manager) { $0.setBaseline("3.0") }
            return store.description
        default:
            let store = CacheStore(directory: stores.cacheURL)
            try store.updateRecord(of: manager) { $0.setBaseline("3.0") }
            try Data("thumbnail format 3".utf8).write(to: stores.cacheURL.appendingPathComponent("v3.txt"))
            return store.description
        }
    }

    static let managers = ["prefs", "library", "thumbnails"]

    @Test(arguments: managers)
    func aNewerStoreIsRefusedBeforeAnyMigrationRuns(manager: String) throws {
        let store = try makeNewer(manager)
        let before = try stores.bytes()
        let error = MigrationError.storeIsNewer(manager: manager, store: store, level: "3.0", appVersion: "2.0")
        #expect(throws: error) { try stores.coordinator("2.0").run() }
        #expect(try stores.bytes() == before, "the other stores' pending 1.1 did not run either")
        #expect(error.description.contains("a newer version of the app wrote it. Nothing was migrated."))
    }

    @Test(arguments: managers)
    func anIgnoredNewerStoreIsLeftAloneWhileTheOthersMigrate(manager: String) throws {
        _ = try makeNewer(manager)
        let before = try stores.bytes()
        let report = try stores.coordinator("2.0", newerStorePolicies: [manager: .ignore]).run()
        #expect(report.steps.map(\.step.id.description).sorted()
            == Self.managers.filter { $0 != manager }.map { "\($0)@1.1" }.sorted())
        #expect(report.managers.first { $0.name == manager }?.levelAfter == "3.0")
        #expect(try ThreeStoreLevels(stores).all == Self.managers.map { $0 == manager ? "3.0" : "1.1" })
        let folderOfStore = ["prefs": "prefs/", "library": "db/", "thumbnails": "cache/"][manager]!
        stores.settle()
        #expect(try stores.bytes().filter { $0.key.hasPrefix(folderOfStore) }
            == before.filter { $0.key.hasPrefix(folderOfStore) })
    }

    @Test func aNewerCacheIsResetAndMigratedAgain() throws {
        _ = try makeNewer("thumbnails")
        let report = try stores.coordinator("2.0", newerStorePolicies: ["thumbnails": .reset]).run()
        #expect(report.steps.filter { $0.step.manager == "thumbnails" }.map(\.step.id.description)
            == ["thumbnails:reset", "thumbnails@1.0", "thumbnails@1.1"])
        #expect(report.steps.allSatisfy { $0.outcome == .applied })
        #expect(try ThreeStoreLevels(stores).all == ["1.1", "1.1", "1.1"])
        // The newer app's file is gone; 1.0 wrote its file again.
        #expect(try FileManager.default.contentsOfDirectory(atPath: stores.cacheURL.path).sorted()
            == [".store-migrations.json", "1.0.txt"])
    }

    @Test(arguments: ["prefs", "library"])
    func resetIsRefusedForStoresThatCannotBeRebuilt(manager: String) throws {
        let store = try makeNewer(manager)
        let before = try stores.bytes()
        #expect(throws: MigrationError.resetNotSupported(manager: manager, store: store)) {
            try stores.coordinator("2.0", newerStorePolicies: [manager: .reset]).run()
        }
        #expect(try stores.bytes() == before)
    }
}
