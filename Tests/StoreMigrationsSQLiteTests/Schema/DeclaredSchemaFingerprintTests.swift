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

    /// The resumable form is fingerprinted as the single-step one, its mappings' sources and the
    /// author's string included, and keeps its name.
    @Test func aResumableSchemaMigrationIsNamedAndFingerprintedByItsDeclaration() throws {
        let folder = try TemporaryFolder()
        let store = SQLiteStore(url: folder.file("library.sqlite"))
        let mapping = EntityMapping(from: "label") { label, destination in
            try destination.insert(into: "tag", ["id": label["id"], "name": label["text"]])
        }
        func launch(_ schema: DeclaredSchema, fingerprint: String) throws -> (MigrationCoordinator, MigrationManager<SQLiteStore>) {
            let coordinator = MigrationCoordinator(appVersion: "2")
            let library = try coordinator.manager("library", store: store)
            library.register("1", sql: "CREATE TABLE label(id INTEGER PRIMARY KEY, text TEXT NOT NULL); INSERT INTO label VALUES (1, 'home')")
            library.registerResumable(
                "2", migratingSchemaTo: schema, mappings: [mapping],
                options: .named("labels become tags", fingerprint: fingerprint))
            return (coordinator, library)
        }
        let schema = DeclaredSchema([Self.tag])
        let (first, library) = try launch(schema, fingerprint: "label text → tag name")
        _ = try first.run()
        #expect(try store.read { db in try db.rows("SELECT id, name FROM tag").map { "\(try $0[0] as Int64) \(try $0[1] as String)" } } == ["1 home"])
        let expected = MigrationFingerprint(of: schema.description + "\n-- mapping label(*)\n-- label text → tag name")
        #expect(try library.record().applied.map(\.name) == [nil, "labels become tags"])
        #expect(try library.record().applied.last?.fingerprint == expected)
        #expect(try launch(schema, fingerprint: "label text → tag name").0.plan().managers[0].changedFingerprints == [])
        let changes = try launch(schema, fingerprint: "label text, trimmed → tag name").0.plan().managers[0].changedFingerprints
        #expect(changes.map(\.migration.description) == ["library@2"])
        #expect(changes.map(\.name) == ["labels become tags"])
    }
}
