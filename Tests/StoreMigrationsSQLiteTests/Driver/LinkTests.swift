import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

@Test func linksSystemSQLite() {
    #expect(linkedSQLiteVersion.hasPrefix("3."))
}
