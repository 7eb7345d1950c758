import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// A migration registered as a declared schema is fingerprinted by its declaration: editing the
/// declaration after it ran is reported by the plan.
@Suite struct DeclaredSchemaFingerprintTests {
    static let tag: DeclaredSchema.Table = .table(
        "tag", primaryKey: ["id"], columns: [.column("id", .integer), .column("name", .text, notNull: true)])

    @Test func anEditedDeclarationIsReported() throws {
        let folder = try TemporaryFolder()
        let store = SQLiteStore(url: folder.file("library.sqlite"))
        func launch(_ schema: DeclaredSchema) throws -> (MigrationCoordinator, MigrationManager<SQLiteStore>) {
            let coordinator = MigrationCoordinator(appVersion: "1")
            let library = try coordinator.manager("library", store: store)
            library.register("1", options: .named("tags"), schema: schema)
            return (coordinator, library)
        }
        let (first, library) = try launch(DeclaredSchema([Self.tag]))
        _ = try first.run()
        #expect(try store.read { db in try db.tableInfo("tag").map(\.name) } == ["id", "name"])
        #expect(try library.record().applied.map(\.fingerprint) == [MigrationFingerprint(of: DeclaredSchema([Self.tag]).description)])
        #expect(try launch(DeclaredSchema([Self.tag])).0.plan().managers[0].changedFingerprints == [])

        let edited = DeclaredSchema([.table(
            "tag", primaryKey: ["id"], columns: [.column("id", .integer), .column("name", .text)])])
        let changes = try launch(edited).0.plan().managers[0].changedFingerprints
        #expect(changes.map(\.migration.description) == ["library@1"])
        #expect(changes.map(\.current) == [MigrationFingerprint(of: edited.description)])
    }
}
