import Foundation
import Testing
@testable import StoreMigrations
import TestSupport

/// `transaction(_:)` outside a run, changing the content and not the records: the change is kept
/// (seen by a fresh store object on the same file or suite), and a transaction that changes
/// neither writes nothing.
@Suite struct ContentOnlyTransactionTests {
    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder()
    }

    @Test func aPreferencesFileKeepsAContentOnlyChange() throws {
        let url = folder.file("settings.json")
        try Data(#"{"theme": "dark"}"#.utf8).write(to: url)
        try PreferencesStore(url: url).transaction { _, prefs in try prefs.set("light", for: "theme") }
        #expect(try PreferencesStore(url: url).read() == Preferences(["theme": "light"]))
        #expect(try PreferencesStore(url: url).readRecords().isEmpty)
    }

    @Test func aPreferencesFileKeepsAContentOnlyChangeBesideRecords() throws {
        let url = folder.file("settings.json")
        let store = PreferencesStore(url: url)
        #expect(try store.apply(storeMigration("settings", "1") { (prefs: inout Preferences) in try prefs.set(1, for: "a") }).isApplied)
        try store.transaction { _, prefs in try prefs.set(2, for: "a") }
        let fresh = PreferencesStore(url: url)
        #expect(try fresh.read() == Preferences(["a": 2]))
        #expect(try fresh.readRecords()["settings"]?.applied.map(\.version) == ["1"])
    }

    /// Written by hand, in a layout the store never writes: any rewrite would change the bytes.
    @Test func aPreferencesTransactionChangingNothingLeavesTheFileAsItWas() throws {
        let url = folder.file("settings.json")
        let text = #"{ "theme":"dark",   "StoreMigrations.levels": {"settings": {"level": "1", "applied": ["1"]}} }"#
        try Data(text.utf8).write(to: url)
        let store = PreferencesStore(url: url)
        let theme = try store.transaction { _, prefs in prefs["theme"] }
        #expect(theme == "dark")
        try store.transaction { _, prefs in try prefs.set("dark", for: "theme") }
        #expect(try Data(contentsOf: url) == Data(text.utf8))
    }

    @Test func aUserDefaultsSuiteKeepsAContentOnlyChange() throws {
        let suite = folder.file("com.example.content").path
        let store = UserDefaultsStore(suiteName: suite)
        #expect(try store.apply(storeMigration("settings", "1") { (prefs: inout Preferences) in try prefs.set(1, for: "a") }).isApplied)
        try store.transaction { _, prefs in try prefs.set(2, for: "a") }
        let fresh = UserDefaultsStore(suiteName: suite)
        #expect(try fresh.read() == Preferences(["a": 2]))
        #expect(try fresh.readRecords()["settings"]?.applied.map(\.version) == ["1"])
        #if !canImport(Darwin)
        // On disk, not only in Foundation's cache of the domain.
        let data = try Data(contentsOf: URL(fileURLWithPath: suite + ".plist"))
        let disk = try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
        #expect(disk["a"] as? Int == 2)
        #endif
    }

    #if !canImport(Darwin)
    /// Written by hand as a binary property list, which Linux's Foundation never writes (it
    /// writes XML): any rewrite would change the bytes.
    @Test func aUserDefaultsTransactionChangingNothingLeavesTheFileAsItWas() throws {
        let suite = folder.file("com.example.unchanged").path
        let store = UserDefaultsStore(suiteName: suite)
        #expect(try store.apply(storeMigration("settings", "1") { (prefs: inout Preferences) in try prefs.set(1, for: "a") }).isApplied)
        let file = URL(fileURLWithPath: suite + ".plist")
        let domain = try #require(try PropertyListSerialization.propertyList(from: Data(contentsOf: file), format: nil))
        let binary = try PropertyListSerialization.data(fromPropertyList: domain, format: .binary, options: 0)
        try binary.write(to: file)
        try store.transaction { _, prefs in try prefs.set(1, for: "a") }
        #expect(try Data(contentsOf: file) == binary)
    }
    #endif

    @Test func anInMemoryStoreKeepsAContentOnlyChange() throws {
        let store = InMemoryStore<[String: Int]>(["a": 1])
        try store.transaction { _, value in value["a"] = 2 }
        #expect(store.contents == ["a": 2])
        #expect(try store.readRecords().isEmpty)
    }
}
