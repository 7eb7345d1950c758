import Testing
@testable import StoreMigrations

@Test func linksSystemSQLite() {
    #expect(linkedSQLiteVersion.hasPrefix("3."))
}
