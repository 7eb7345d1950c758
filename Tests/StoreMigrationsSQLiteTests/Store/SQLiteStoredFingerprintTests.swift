import Foundation
import Testing
import StoreMigrations
import StoreMigrationsSQLite
import TestSupport

/// A damaged fingerprint in the history table is a typed error naming the manager, the version
/// and the table, never dropped: dropped, it would read as "recorded before fingerprints" and
/// hide an edited migration from the fingerprint policy.
@Suite struct SQLiteStoredFingerprintTests {
    @Test func aMalformedStoredFingerprintIsATypedError() throws {
        let scratch = try TemporaryFolder()
        let url = scratch.file("library.sqlite")
        func launch() throws -> MigrationCoordinator {
            let coordinator = MigrationCoordinator(appVersion: "1.0")
            let library = try coordinator.manager("library", store: SQLiteStore(url: url))
            library.register("1.0", options: .named("create notes", fingerprint: "CREATE TABLE note")) { db in
                try db.execute("CREATE TABLE note (id INTEGER PRIMARY KEY)")
            }
            return coordinator
        }
        #expect(try launch().run().succeeded)
        let damage = SQLiteStore(url: url)
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        let raw = try coordinator.manager("raw", store: damage)
        raw.register("1.0") { db in try db.execute("UPDATE store_migrations_history SET fingerprint = 'damaged' WHERE manager = 'library'") }
        #expect(try coordinator.run().succeeded)
        damage.close()

        #expect {
            try launch().plan()
        } throws: { error in
            guard case .unreadableState(let manager, _, let reason) = error as? MigrationError else { return false }
            return manager == "library" && reason.contains("fingerprint of 1.0") && reason.contains("\"damaged\"")
                && reason.contains("store_migrations_history")
        }
    }
}
