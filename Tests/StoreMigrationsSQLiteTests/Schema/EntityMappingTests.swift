import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// Mapped (heavyweight) migrations: the guide's two examples, on a few thousand rows.
@Suite struct EntityMappingTests {
    let scratch: TemporaryFolder
    let store: SQLiteStore

    init() throws {
        scratch = try TemporaryFolder()
        store = SQLiteStore(url: scratch.file("agenda.sqlite"))
    }

    // MARK: Splitting nombre_completo

    /// The full names the split must handle: the guide's "apellido1 apellido2, nombre", extra
    /// spaces, a name without a comma, a second comma, empty and NULL.
    static let fullNames: [String?] = [
        "García López, Ana", "  Pérez   Gómez ,  Luis ", "Cher", "", nil, "De la Fuente, María José, hija",
        "Núñez, Íñigo",
    ]

    /// "apellido1 apellido2, nombre" split at its first comma; a name without a comma is all
    /// `nombre`; blank parts are NULL.
    static func split(_ fullName: String?) -> (apellidos: String?, nombre: String?) {
        func part(_ text: Substring) -> String? {
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            return trimmed.isEmpty ? nil : trimmed
        }
        guard let fullName else { return (nil, nil) }
        guard let comma = fullName.firstIndex(of: ",") else { return (nil, part(fullName[...])) }
        return (part(fullName[..<comma]), part(fullName[fullName.index(after: comma)...]))
    }

    static let personasV2: DeclaredSchema = [
        .table("persona", primaryKey: ["id"], columns: [
            .column("id", .integer), .column("apellidos", .text), .column("nombre", .text), .column("email", .text),
        ], indexes: [.index("persona_on_apellidos", on: ["apellidos", "nombre"])]),
        .table("direccion", primaryKey: ["id"], columns: [
            .column("id", .integer), .column("persona_id", .integer, notNull: true), .column("calle", .text),
        ], foreignKeys: [.foreignKey(["persona_id"], references: "persona", columns: ["id"], onDelete: .cascade)]),
    ]

    static let splitNames = EntityMapping(from: "persona", columns: ["id", "nombre_completo", "email"], batchSize: 500) {
        persona, destination in
        let (apellidos, nombre) = split(try persona["nombre_completo"])
        try destination.insert(into: "persona", [
            "id": persona["id"], "apellidos": DatabaseValue(apellidos), "nombre": DatabaseValue(nombre),
            "email": persona["email"],
        ])
    }

    /// Version 1: people with their full name, and their addresses.
    func createPersonas(count: Int) throws {
        _ = try store.apply(sqliteStep("1.0") { db in
            try db.execute("""
                CREATE TABLE persona(id INTEGER PRIMARY KEY, nombre_completo TEXT, email TEXT);
                CREATE INDEX persona_on_nombre ON persona(nombre_completo);
                CREATE TABLE direccion(
                    id INTEGER PRIMARY KEY, persona_id INTEGER NOT NULL REFERENCES persona(id) ON DELETE CASCADE,
                    calle TEXT);
                """)
            let persona = try db.prepare("INSERT INTO persona(id, nombre_completo, email) VALUES (?, ?, ?)")
            let direccion = try db.prepare("INSERT INTO direccion(persona_id, calle) VALUES (?, ?)")
            for id in 1...count {
                let name = Self.fullNames[id % Self.fullNames.count]
                try persona.execute(arguments: [.integer(Int64(id)), DatabaseValue(name), .text("p\(id)@example.com")])
                if id % 2 == 0 { try direccion.execute(arguments: [.integer(Int64(id)), .text("Calle \(id)")]) }
            }
        })
    }

    @Test func theFullNameSplitsIntoApellidosAndNombre() throws {
        try createPersonas(count: 3_000)
        let log = ProgressLog()
        let outcome = try store.apply(sqliteStep("2.0", run: log.run()) { db in
            try db.migrateSchema(to: Self.personasV2, mappings: [Self.splitNames])
        })
        #expect(outcome.isApplied)

        try store.read { db in
            let rows = try db.rows("SELECT id, apellidos, nombre, email FROM persona ORDER BY id")
            #expect(rows.count == 3_000)
            for row in rows {
                let id: Int = try row["id"]
                let expected = Self.split(Self.fullNames[id % Self.fullNames.count])
                #expect(try row["apellidos"] as String? == expected.apellidos)
                #expect(try row["nombre"] as String? == expected.nombre)
                #expect(try row["email"] as String == "p\(id)@example.com")
            }
            #expect(try db.schemaChanges(to: Self.personasV2).isEmpty)
            #expect(try db.indexes(on: "persona").map(\.name) == ["persona_on_apellidos"])
            #expect(try db.scalar("SELECT count(*) FROM direccion JOIN persona ON persona.id = persona_id", as: Int.self) == 1_500)
            #expect(try db.foreignKeys(of: "direccion").first?.parentTable == "persona")
            #expect(try db.scalar("SELECT count(*) FROM sqlite_master WHERE name LIKE 'store_migrations_source%'", as: Int.self) == 0)
        }
        #expect(Self.split("García López, Ana") == ("García López", "Ana"))
        #expect(Self.split("  Pérez   Gómez ,  Luis ") == ("Pérez   Gómez", "Luis"))
        #expect(Self.split("Cher") == (nil, "Cher"))
        #expect(Self.split("") == (nil, nil))
        #expect(Self.split("De la Fuente, María José, hija") == ("De la Fuente", "María José, hija"))
        #expect(log.fractions.count >= 6, "a report per batch of 500 rows")
        #expect(log.fractions == log.fractions.sorted() && log.fractions.last == 1)
    }

    @Test func aMappingThatThrowsLeavesEverythingAsItWas() throws {
        try createPersonas(count: 100)
        let before = try store.read { db in try db.schema() }
        let rows = try store.read { db in try db.rows("SELECT * FROM persona ORDER BY id").map(\.values) }
        let failing = EntityMapping(from: "persona") { persona, destination in
            let id: Int = try persona["id"]
            if id == 77 { throw SimulatedBodyFailure() }
            try destination.insert(into: "persona", ["id": persona["id"]])
        }
        #expect(throws: SimulatedBodyFailure.self) {
            try store.apply(sqliteStep("2.0") { db in try db.migrateSchema(to: Self.personasV2, mappings: [failing]) })
        }
        try store.read { db throws in
            #expect(try db.schema() == before)
            #expect(try db.rows("SELECT * FROM persona ORDER BY id").map(\.values) == rows)
        }
        #expect(try store.states()["library"]?.level == "1.0")
    }

    @Test func aCancelledRunStopsBetweenBatchesAndChangesNothing() throws {
        try createPersonas(count: 2_000)
        let before = try store.read { db in try db.schema() }
        #expect(throws: CancellationError.self) {
            try store.apply(sqliteStep("2.0", run: ProgressLog().run(cancelled: true)) { db in
                try db.migrateSchema(to: Self.personasV2, mappings: [Self.splitNames])
            })
        }
        #expect(try store.read { db in try db.schema() } == before)
    }

    @Test func rowsLeftPointingAtMissingRowsFailTheMigration() throws {
        try createPersonas(count: 50)
        let withoutNames = EntityMapping(from: "persona") { persona, destination in
            guard let name: String = try persona["nombre_completo"], !name.isEmpty else { return }
            try destination.insert(into: "persona", ["id": persona["id"], "nombre": .text(name)])
        }
        let error = try #require(#expect(throws: SQLiteError.self) {
            try store.apply(sqliteStep("2.0") { db in try db.migrateSchema(to: Self.personasV2, mappings: [withoutNames]) })
        })
        #expect(error.isForeignKeyViolation)
        #expect(error.foreignKeyViolations.first?.table == "direccion")
        #expect(try store.read { try $0.tableInfo("persona").map(\.name) } == ["id", "nombre_completo", "email"])
    }

    @Test func withForeignKeysEnforcedATableOthersReferToIsNotMapped() throws {
        try createPersonas(count: 10)
        let db = try Database(path: store.url.path, busyTimeout: 1)
        let error = try #require(#expect(throws: SQLiteError.self) {
            try db.migrateSchema(to: Self.personasV2, mappings: [Self.splitNames])
        })
        #expect(error.message.contains("table direccion refers to it"))
        #expect(error.message.contains("foreignKeyCheck: .deferred"))
        #expect(try db.scalar("SELECT count(*) FROM direccion", as: Int.self) == 5)
        // Mapping the referring table too replaces both.
        let direcciones = EntityMapping(from: "direccion") { direccion, destination in
            try destination.insert(into: "direccion", ["id": direccion["id"], "persona_id": direccion["persona_id"]])
        }
        try db.migrateSchema(to: Self.personasV2, mappings: [Self.splitNames, direcciones])
        #expect(try db.scalar("SELECT count(*) FROM direccion JOIN persona ON persona.id = persona_id", as: Int.self) == 5)
        #expect(try db.schemaChanges(to: Self.personasV2).isEmpty)
    }

    @Test func theDryRunListsTheMappingAndBadMappingsAreRefused() throws {
        try createPersonas(count: 10)
        let changes = try store.read { db in try db.schemaChanges(to: Self.personasV2, mappings: [Self.splitNames]) }
        #expect(changes.map(\.description) == [
            "create table persona",
            "map the rows of persona through its entity mapping, then drop it",
            "create index persona_on_apellidos (apellidos, nombre) on persona",
        ])
        let bad = [
            EntityMapping(from: "persona", columns: ["nombre"]) { _, _ in },
            EntityMapping(from: "nadie", batchSize: 0) { _, _ in },
        ]
        let error = try #require(#expect(throws: SchemaMigrationError.self) {
            try store.read { db in try db.schemaChanges(to: Self.personasV2, mappings: bad) }
        })
        #expect(error.description.contains("persona.nombre is read by the table's entity mapping, but the table has no such column"))
        #expect(error.description.contains("table nadie is the source of an entity mapping, but the database has no such table"))
    }

    // MARK: The category attribute becomes a Categoria entity, many-to-many

    static let categorias: [String?] = ["compras", "ideas", nil, "recetas", "", "viajes", "Ideas", "trabajo", "compras"]

    static let notasV3: DeclaredSchema = [
        .table("nota", primaryKey: ["id"], columns: [
            .column("id", .integer), .column("texto", .text, notNull: true), .column("momento", .text),
        ]),
        .table("categoria", primaryKey: ["id"], columns: [
            .column("id", .integer), .column("nombre", .text, notNull: true),
        ], unique: [["nombre"]]),
        .table("nota_categoria", primaryKey: ["nota_id", "categoria_id"], columns: [
            .column("nota_id", .integer, notNull: true), .column("categoria_id", .integer, notNull: true),
        ], foreignKeys: [
            .foreignKey(["nota_id"], references: "nota", columns: ["id"], onDelete: .cascade),
            .foreignKey(["categoria_id"], references: "categoria", columns: ["id"], onDelete: .cascade),
        ], indexes: [.index("nota_categoria_on_categoria", on: ["categoria_id"])]),
    ]

    @Test func theCategoryAttributeBecomesACategoriaTableRelatedManyToMany() throws {
        _ = try store.apply(sqliteStep("2.0") { db in
            try db.execute("CREATE TABLE nota(id INTEGER PRIMARY KEY, texto TEXT NOT NULL, momento TEXT, categoria TEXT)")
            let insert = try db.prepare("INSERT INTO nota(texto, momento, categoria) VALUES (?, ?, ?)")
            for number in 1...3_000 {
                try insert.execute(arguments: [
                    .text("Nota \(number)"), .text("2024-03-\(number % 28 + 1)"),
                    DatabaseValue(Self.categorias[number % Self.categorias.count]),
                ])
            }
        })
        let notas = try store.read { db in try db.rows("SELECT id, texto, momento, categoria FROM nota ORDER BY id") }

        let outcome = try store.apply(sqliteStep("3.0") { db in
            try db.migrateSchema(to: Self.notasV3, mappings: [
                EntityMapping(from: "nota") { nota, destination in
                    let notaID = try destination.insert(into: "nota", [
                        "id": nota["id"], "texto": nota["texto"], "momento": nota["momento"],
                    ])
                    guard let nombre: String = try nota["categoria"], !nombre.isEmpty else { return }
                    let categoriaID = try destination.insertOnce(
                        into: "categoria", key: .text(nombre), ["nombre": .text(nombre)])
                    try destination.insert(into: "nota_categoria", [
                        "nota_id": .integer(notaID), "categoria_id": .integer(categoriaID),
                    ])
                },
            ])
        })
        #expect(outcome.isApplied)

        try store.read { db throws in
            #expect(try db.schemaChanges(to: Self.notasV3).isEmpty)
            #expect(try db.rows("SELECT id, texto, momento FROM nota ORDER BY id").map(\.values)
                == notas.map { Array($0.values.prefix(3)) })
            #expect(try db.rows("SELECT nombre FROM categoria ORDER BY id").map { try $0["nombre"] as String }
                == ["ideas", "recetas", "viajes", "Ideas", "trabajo", "compras"])
            let links = try db.rows("""
                SELECT nota.id, categoria.nombre FROM nota
                LEFT JOIN nota_categoria ON nota_categoria.nota_id = nota.id
                LEFT JOIN categoria ON categoria.id = nota_categoria.categoria_id
                ORDER BY nota.id
                """)
            #expect(links.count == 3_000, "one link at most per note")
            for (link, nota) in zip(links, notas) {
                let old: String? = try nota["categoria"]
                #expect(try link["nombre"] as String? == (old?.isEmpty == false ? old : nil))
            }
        }
        // Many-to-many: a note takes more categories, which other notes share.
        _ = try store.apply(sqliteStep("3.1") { db in
            try db.execute("INSERT INTO nota_categoria(nota_id, categoria_id) VALUES (1, 2), (1, 3)")
        })
        #expect(try store.read { try $0.scalar("SELECT count(*) FROM nota_categoria WHERE nota_id = 1", as: Int.self) } == 3)
    }
}
