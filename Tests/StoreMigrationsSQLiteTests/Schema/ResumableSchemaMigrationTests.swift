import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// Resumable schema migrations with entity mappings on real database files: the schema changes
/// with the first batch, rows are mapped batch by batch and committed with the cursor, a failed
/// batch resumes at the next launch without mapping a row twice or creating an `insertOnce` row
/// twice, and bad input is refused before any change.
@Suite struct ResumableSchemaMigrationTests {
    static let notes = 3_000
    /// The guide's notes with a category attribute, and the schema with a `categoria` table.
    static let categories = EntityMappingTests.categorias
    static let notasV3 = EntityMappingTests.notasV3
    let folder: TemporaryFolder
    let url: URL

    init() throws {
        folder = try TemporaryFolder()
        url = folder.file("notas.sqlite")
    }

    /// The category attribute turned into a `categoria` table, one row per name, counting the
    /// calls per source note in `calls`; throws once at note `failAt` if given.
    static func categorias(failAt: Int64? = nil, failures: Locked<Int> = Locked(0), calls: Locked<[Int64: Int]>) -> EntityMapping {
        EntityMapping(from: "nota") { nota, destination in
            let id: Int64 = try nota["id"]
            if id == failAt, failures.value == 0 {
                failures.value = 1
                throw SimulatedBodyFailure()
            }
            calls.value[id, default: 0] += 1
            let notaID = try destination.insert(into: "nota", ["id": nota["id"], "texto": nota["texto"], "momento": nota["momento"]])
            guard let nombre: String = try nota["categoria"], !nombre.isEmpty else { return }
            let categoriaID = try destination.insertOnce(into: "categoria", key: .text(nombre), ["nombre": .text(nombre)])
            try destination.insert(into: "nota_categoria", ["nota_id": .integer(notaID), "categoria_id": .integer(categoriaID)])
        }
    }

    /// A coordinator whose `2.0` creates the notes with their category column and `3.0` is what
    /// `register` adds.
    func coordinator(_ register: (MigrationManager<SQLiteStore>) -> Void) throws -> MigrationCoordinator {
        let coordinator = MigrationCoordinator(appVersion: "3.0")
        let library = try coordinator.manager("library", store: SQLiteStore(url: url))
        library.register("2.0") { db in
            try db.execute("CREATE TABLE nota(id INTEGER PRIMARY KEY, texto TEXT NOT NULL, momento TEXT, categoria TEXT)")
            let insert = try db.prepare("INSERT INTO nota(texto, momento, categoria) VALUES (?, ?, ?)")
            for number in 1...Self.notes {
                try insert.execute(arguments: [
                    .text("Nota \(number)"), .text("2024-03-\(number % 28 + 1)"),
                    DatabaseValue(Self.categories[number % Self.categories.count]),
                ])
            }
        }
        register(library)
        return coordinator
    }

    func tables() throws -> [String] {
        try RawSQLite.strings("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", at: url.path).compactMap { $0 }
    }

    @Test func aFailedBatchResumesAtTheNextLaunchMappingEveryNoteOnceAndEveryCategoryOnce() throws {
        let calls = Locked<[Int64: Int]>([:])
        let failures = Locked(0)
        let events = EventLog()
        func launch() throws -> MigrationReport {
            let coordinator = try coordinator { library in
                library.registerResumable(
                    "3.0", migratingSchemaTo: Self.notasV3,
                    mappings: [Self.categorias(failAt: 1_700, failures: failures, calls: calls)], batchSize: .fixed(250))
            }
            coordinator.observer = { events.append(describe($0)) }
            return try runReport(of: coordinator)
        }

        let first = try launch()
        #expect(first.failures.map(\.step.id.description) == ["library@3.0"])
        #expect(events.all.filter { $0.hasPrefix("batch") } == (1...6).map { "batch library@3.0 \($0 * 250)" })
        // The schema changed with the first batch; the failed seventh batch left nothing.
        #expect(try tables() == ["categoria", "nota", "nota_categoria", "store_migrations_history", "store_migrations_levels",
                                 "store_migrations_mapping_keys", "store_migrations_source_nota"])
        #expect(try RawSQLite.strings("SELECT count(*) FROM nota", at: url.path) == ["1500"])
        #expect(try RawSQLite.strings("SELECT max(id) FROM nota", at: url.path) == ["1500"])
        let record = try #require(try SQLiteStore(url: url).readRecords()["library"])
        #expect(record.progress(of: "3.0")?.done == 1_500)
        #expect(record.progress(of: "3.0")?.total == Self.notes)

        let second = try launch()
        #expect(second.steps.map(\.outcome) == [.applied])
        // The failed batch's calls (notes 1,501 to 1,699) were rolled back with it and made again.
        #expect(calls.value.count == Self.notes)
        #expect(calls.value.filter { $0.value != 1 }.keys.sorted() == Array(1_501...1_699))
        #expect(calls.value.filter { $0.value != 1 }.values.allSatisfy { $0 == 2 })
        #expect(try tables() == ["categoria", "nota", "nota_categoria", "store_migrations_history", "store_migrations_levels"])
        #expect(try RawSQLite.strings("SELECT nombre FROM categoria ORDER BY id", at: url.path)
            == ["ideas", "recetas", "viajes", "Ideas", "trabajo", "compras"])
        #expect(try RawSQLite.strings("""
            SELECT count(*) FROM nota JOIN nota_categoria ON nota_id = nota.id JOIN categoria ON categoria.id = categoria_id
            """, at: url.path) == ["\((1...Self.notes).filter { Self.categories[$0 % 9].map { !$0.isEmpty } ?? false }.count)"])
        #expect(try SQLiteStore(url: url).read { try $0.schemaChanges(to: Self.notasV3) }.isEmpty)
        #expect(try RawSQLite.strings("SELECT progress FROM store_migrations_levels", at: url.path) == [nil])
    }

    @Test func aDeclarationThatCannotBeMetIsRefusedByTheFirstBatchBeforeAnyChange() throws {
        let broken: DeclaredSchema = [
            .table("nota", primaryKey: ["id"], columns: [.column("id", .integer), .column("texto", .text, notNull: true)]),
        ]
        let coordinator = try coordinator { library in
            library.registerResumable(
                "3.0", migratingSchemaTo: broken, mappings: [Self.categorias(calls: Locked([:])), EntityMapping(from: "nada") { _, _ in }])
        }
        let report = try runReport(of: coordinator)
        let failure = try #require(report.failures.first?.error as? SchemaMigrationError)
        guard case .invalidDeclaration(let problems, _) = failure else {
            Issue.record("not an invalid declaration: \(failure)")
            return
        }
        #expect(problems.map(\.table) == ["nada"])
        #expect(try tables() == ["nota", "store_migrations_history", "store_migrations_levels"])
        #expect(try RawSQLite.strings("SELECT name FROM pragma_table_info('nota')", at: url.path) == ["id", "texto", "momento", "categoria"])
        #expect(try RawSQLite.strings("SELECT progress FROM store_migrations_levels", at: url.path) == [nil])
    }

    @Test func aTableOtherTablesReferToIsRefusedBeforeAnyChangeNamingTheFix() throws {
        let coordinator = try coordinator { library in
            library.register("2.1") { db in
                try db.execute("CREATE TABLE adjunto(id INTEGER PRIMARY KEY, nota_id INTEGER REFERENCES nota(id))")
                try db.execute("INSERT INTO adjunto(nota_id) VALUES (1), (2)")
            }
            library.registerResumable(
                "3.0", migratingSchemaTo: Self.notasV3, dataLoss: .allow(tables: ["adjunto"]), mappings: [Self.categorias(calls: Locked([:]))])
        }
        let report = try runReport(of: coordinator)
        let error = try #require(report.failures.first?.error)
        #expect("\(error)".contains(
            "a resumable schema migration cannot map the rows of table nota: table adjunto refers to it, and between two "
                + "batches adjunto's rows would refer to rows not mapped yet. Map adjunto in the same migration, or "
                + "register an ordinary migration with foreignKeyCheck: .deferred"))
        #expect(try tables() == ["adjunto", "nota", "store_migrations_history", "store_migrations_levels"])
        #expect(try RawSQLite.strings("SELECT progress FROM store_migrations_levels", at: url.path) == [nil])
    }

    @Test func mappingsChangedAfterTheMigrationStartedAreRefusedNamingTheFix() throws {
        let failures = Locked(0)
        let first = try runReport(of: try coordinator { library in
            library.registerResumable(
                "3.0", migratingSchemaTo: Self.notasV3,
                mappings: [Self.categorias(failAt: 600, failures: failures, calls: Locked([:]))], batchSize: .fixed(250))
        })
        #expect(first.failures.count == 1)
        let second = try runReport(of: try coordinator { library in
            library.registerResumable(
                "3.0", migratingSchemaTo: Self.notasV3,
                mappings: [Self.categorias(calls: Locked([:])), EntityMapping(from: "categoria") { _, _ in }], batchSize: .fixed(250))
        })
        let error = try #require(second.failures.first?.error)
        #expect("\(error)".contains(
            "the schema migration was started with 1 entity mappings and is now given 2; keep the mappings of a started "
                + "migration as they were"))
        #expect(try RawSQLite.strings("SELECT count(*) FROM nota", at: url.path) == ["500"], "nothing more was mapped")
    }
}
