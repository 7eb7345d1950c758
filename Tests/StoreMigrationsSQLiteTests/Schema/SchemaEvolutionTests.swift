import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// Declared schemas and inferred (lightweight) migrations, on the guide's notes app: folders
/// (carpeta) own notes (nota, ON DELETE CASCADE), attachments (adjunto) refer to notes.
@Suite struct SchemaEvolutionTests {
    let scratch: TemporaryFolder
    let db: Database

    init() throws {
        scratch = try TemporaryFolder()
        db = try scratch.openDatabase()
        try db.execute("""
            CREATE TABLE carpeta(id INTEGER PRIMARY KEY, nombre TEXT NOT NULL UNIQUE);
            CREATE TABLE nota(
                id INTEGER PRIMARY KEY,
                carpeta_id INTEGER REFERENCES carpeta(id) ON DELETE CASCADE,
                texto TEXT NOT NULL,
                fecha TEXT,
                categoria TEXT,
                prioridad INTEGER);
            CREATE INDEX nota_on_fecha ON nota(fecha);
            CREATE TABLE adjunto(id INTEGER PRIMARY KEY, nota_id INTEGER NOT NULL REFERENCES nota(id), nombre TEXT);
            INSERT INTO carpeta(id, nombre) VALUES (1, 'Casa'), (2, 'Trabajo'), (3, 'Viajes');
            """)
        try db.execute("BEGIN")
        let nota = try db.prepare(
            "INSERT INTO nota(carpeta_id, texto, fecha, categoria, prioridad) VALUES (?, ?, ?, ?, ?)")
        let adjunto = try db.prepare("INSERT INTO adjunto(nota_id, nombre) VALUES (?, ?)")
        for number in 1...300 {
            try nota.execute(arguments: [
                .integer(Int64(number % 3 + 1)), .text("Nota \(number)"),
                .text("2024-02-\(String(format: "%02d", number % 28 + 1))"),
                number % 4 == 0 ? nil : .text(["compras", "ideas", "recetas"][number % 3]),
                number % 5 == 0 ? nil : .integer(Int64(number % 3)),
            ])
            if number % 3 == 0 { try adjunto.execute(arguments: [.integer(db.lastInsertedRowID), .text("adjunto-\(number).pdf")]) }
        }
        try db.execute("COMMIT")
    }

    // MARK: Declarations

    static let carpeta: DeclaredSchema.Table = .table(
        "carpeta", primaryKey: ["id"],
        columns: [.column("id", .integer), .column("nombre", .text, notNull: true)],
        unique: [["nombre"]])

    static let adjunto: DeclaredSchema.Table = .table(
        "adjunto", primaryKey: ["id"],
        columns: [.column("id", .integer), .column("nota_id", .integer, notNull: true), .column("nombre", .text)],
        foreignKeys: [.foreignKey(["nota_id"], references: "nota", columns: ["id"])])

    static let notaColumns: [DeclaredSchema.Column] = [
        .column("id", .integer), .column("carpeta_id", .integer), .column("texto", .text, notNull: true),
        .column("fecha", .text), .column("categoria", .text), .column("prioridad", .integer),
    ]
    static let notaForeignKeys: [DeclaredSchema.ForeignKey] = [
        .foreignKey(["carpeta_id"], references: "carpeta", columns: ["id"], onDelete: .cascade),
    ]

    /// The notes schema with `nota` declared as given, and the other tables as they are.
    static func notes(
        _ columns: [DeclaredSchema.Column] = notaColumns, name: String = "nota", renamedFrom: String? = nil,
        unique: [[String]] = [], foreignKeys: [DeclaredSchema.ForeignKey] = notaForeignKeys,
        indexes: [DeclaredSchema.Index] = [.index("nota_on_fecha", on: ["fecha"])],
        adjunto: DeclaredSchema.Table = adjunto, more: [DeclaredSchema.Table] = []
    ) -> DeclaredSchema {
        DeclaredSchema([
            carpeta,
            .table(
                name, renamedFrom: renamedFrom, primaryKey: ["id"], columns: columns, unique: unique,
                foreignKeys: foreignKeys, indexes: indexes),
            adjunto,
        ] + more)
    }

    /// `notaColumns` with `column` replaced by `replacement`, or removed when it is `nil`.
    static func notaColumns(replacing column: String, with replacement: DeclaredSchema.Column?) -> [DeclaredSchema.Column] {
        notaColumns.compactMap { $0.name == column ? replacement : $0 }
    }

    func values(_ sql: String) throws -> [[DatabaseValue]] {
        try db.rows(sql).map(\.values)
    }

    /// Migrates to `schema`, then checks that the database has it: nothing left to change, and
    /// every foreign key satisfied.
    @discardableResult
    func migrate(
        to schema: DeclaredSchema, dataLoss: DataLossPolicy = .refuse, sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> [SchemaChange] {
        let changes = try db.migrateSchema(to: schema, dataLoss: dataLoss)
        #expect(try db.schemaChanges(to: schema).isEmpty, "the database has the declared schema", sourceLocation: sourceLocation)
        #expect(try db.foreignKeyViolations().isEmpty, sourceLocation: sourceLocation)
        #expect(try db.scalar("PRAGMA integrity_check", as: String.self) == "ok", sourceLocation: sourceLocation)
        return changes
    }

    // MARK: Reading the live schema

    @Test func theLiveSchemaReadsAsItsDeclaration() throws {
        let live = try db.schema()
        #expect(live == Self.notes())
        #expect(try db.schemaChanges(to: Self.notes()).isEmpty)
        #expect(live.description.contains("CREATE TABLE \"nota\" ("))
        #expect(live.description.contains("FOREIGN KEY (\"carpeta_id\") REFERENCES \"carpeta\" (\"id\") ON DELETE CASCADE"))
        #expect(live.description.contains("CREATE INDEX \"nota_on_fecha\" ON \"nota\" (\"fecha\");"))
        let decoded = try JSONDecoder().decode(DeclaredSchema.self, from: JSONEncoder().encode(live))
        #expect(decoded == live)
    }

    @Test func aDeclaredSchemaCreatedFromNothingReadsBackTheSame() throws {
        let fresh = try scratch.openDatabase("fresh.sqlite")
        let schema: DeclaredSchema = [
            .table("libro", primaryKey: ["isbn"], columns: [
                .column("isbn", .text, notNull: true),
                .column("titulo", .text, notNull: true, default: "sin título"),
                .column("paginas", .integer, default: 0),
                .column("precio", "NUMERIC(8, 2)", default: -1.5),
                .column("portada", .blob, default: .value(.blob(Data([0xCA, 0xFE])))),
                .column("alta", .text, notNull: true, default: .expression("CURRENT_TIMESTAMP")),
                .column("revisado", .integer, default: false),
                .column("nota", .text, default: .expression("lower('Pendiente')")),
            ], unique: [["titulo", "paginas"]], indexes: [
                .index("libro_on_alta", on: ["alta", "titulo"]),
                .index("libro_on_precio", on: ["precio"], unique: true, where: "precio > 0"),
            ]),
            .table("ejemplar", primaryKey: ["isbn", "numero"], columns: [
                .column("isbn", .text), .column("numero", .integer), .column("estado", ""),
            ], foreignKeys: [
                .foreignKey(["isbn"], references: "libro", onDelete: .restrict, onUpdate: .cascade),
            ]),
        ]
        let changes = try fresh.migrateSchema(to: schema)
        #expect(changes.map(\.description) == [
            "create table libro", "create table ejemplar",
            "create index libro_on_alta (alta, titulo) on libro",
            "create unique index libro_on_precio (precio) where precio > 0 on libro",
        ])
        #expect(try fresh.schema() == schema)
        #expect(try fresh.schemaChanges(to: schema).isEmpty)
        try fresh.execute("INSERT INTO libro(isbn) VALUES ('978-84')")
        let row = try #require(try fresh.row("SELECT titulo, paginas, precio, portada, revisado, nota FROM libro"))
        #expect(row.values == [.text("sin título"), .integer(0), .real(-1.5), .blob(Data([0xCA, 0xFE])), .integer(0), .text("pendiente")])
    }

    @Test func defaultsCompareAsSQLNotAsText() {
        #expect(DeclaredSchema.Default.expression("current_timestamp") == .expression(" CURRENT_TIMESTAMP "))
        #expect(DeclaredSchema.Default.expression("(1.50)") == 1.5)
        #expect(DeclaredSchema.Default.expression("'it''s'") == "it's")
        #expect(DeclaredSchema.Default.expression("x'cafe'") == .value(.blob(Data([0xCA, 0xFE]))))
        #expect(DeclaredSchema.Default.expression("TRUE") == true)
        #expect(DeclaredSchema.Default.expression("-5") == -5)
        #expect(DeclaredSchema.Default.expression("'5'") != 5)
        #expect(DeclaredSchema.Column.column("x", .text, default: .value(.null)).defaultValue == nil)
    }

    // MARK: Adding

    @Test func addingTablesAndColumnsKeepsTheRowsAndGivesThemTheDefaults() throws {
        let before = try values("SELECT id, carpeta_id, texto, fecha, categoria, prioridad FROM nota ORDER BY id")
        let etiqueta: DeclaredSchema.Table = .table(
            "etiqueta", primaryKey: ["id"], columns: [.column("id", .integer), .column("nombre", .text)])
        let changes = try migrate(to: Self.notes(
            Self.notaColumns + [.column("guid", .text), .column("archivada", .integer, notNull: true, default: 0)],
            indexes: [.index("nota_on_fecha", on: ["fecha"]), .index("nota_on_guid", on: ["guid"], unique: true)],
            more: [etiqueta]))
        #expect(changes.map(\.description) == [
            "add column nota: \"guid\" TEXT", "add column nota: \"archivada\" INTEGER NOT NULL DEFAULT 0",
            "create table etiqueta", "create unique index nota_on_guid (guid) on nota",
        ])
        #expect(try values("SELECT id, carpeta_id, texto, fecha, categoria, prioridad FROM nota ORDER BY id") == before)
        #expect(try db.scalar("SELECT count(*) FROM nota WHERE guid IS NULL AND archivada = 0", as: Int.self) == 300)
        #expect(try db.indexes(on: "nota").map(\.name) == ["nota_on_fecha", "nota_on_guid"])
    }

    @Test func aColumnWhoseDefaultIsAnExpressionIsAddedByRebuildingTheTable() throws {
        let before = try values("SELECT * FROM nota ORDER BY id")
        let changes = try migrate(to: Self.notes(
            Self.notaColumns + [.column("creada", .text, notNull: true, default: .expression("CURRENT_TIMESTAMP"))]))
        #expect(changes.map(\.description) == [
            "rebuild table nota: add column \"creada\" TEXT NOT NULL DEFAULT (CURRENT_TIMESTAMP)",
        ])
        #expect(try values("SELECT id, carpeta_id, texto, fecha, categoria, prioridad FROM nota ORDER BY id") == before)
        #expect(try db.scalar("SELECT count(*) FROM nota WHERE creada LIKE '20__-__-__ __:__:__'", as: Int.self) == 300)
        #expect(try db.indexes(on: "nota").map(\.name) == ["nota_on_fecha"])
        #expect(try db.foreignKeys(of: "adjunto").first?.parentTable == "nota")
        #expect(try db.scalar("SELECT count(*) FROM adjunto", as: Int.self) == 100)
    }

    @Test func aRequiredColumnWithoutDefaultCannotBeAddedToRows() throws {
        let error = try #require(#expect(throws: SchemaMigrationError.self) {
            try db.migrateSchema(to: Self.notes(Self.notaColumns + [.column("guid", .text, notNull: true)]))
        })
        guard case let .needsMappedMigration(problems, database) = error else { Issue.record("\(error)"); return }
        #expect(problems.map(\.column) == ["guid"])
        #expect(database == db.path)
        #expect(error.description.contains("nota.guid is a new NOT NULL column without a default"))
        #expect(try db.schema() == Self.notes())
    }

    // MARK: Removing

    @Test func emptyColumnsAndTablesAreDroppedWithoutAsking() throws {
        try db.execute("CREATE TABLE borrador(id INTEGER PRIMARY KEY, texto TEXT); UPDATE nota SET categoria = NULL")
        let changes = try migrate(to: Self.notes(Self.notaColumns(replacing: "categoria", with: nil)))
        #expect(changes == [.dropColumn("categoria", table: "nota"), .dropTable("borrador")])
        #expect(try db.tableInfo("nota").map(\.name) == ["id", "carpeta_id", "texto", "fecha", "prioridad"])
        #expect(try db.scalar("SELECT count(*) FROM nota", as: Int.self) == 300)
    }

    @Test func droppingATableWithRowsNeedsPermission() throws {
        try db.execute("CREATE TABLE borrador(id INTEGER PRIMARY KEY, texto TEXT); INSERT INTO borrador(texto) VALUES ('x')")
        let error = try #require(#expect(throws: SchemaMigrationError.self) { try db.migrateSchema(to: Self.notes()) })
        #expect(error.description.contains("table borrador is not declared any more but has rows"))
        #expect(error.description.contains("dataLoss: .allow(tables: [\"borrador\"])"))
        #expect(try db.tableExists("borrador"))
        try migrate(to: Self.notes(), dataLoss: .allow(tables: ["borrador"]))
        #expect(try !db.tableExists("borrador"))
    }

    @Test func aViewLeftNamingADroppedTableUndoesTheMigration() throws {
        try db.execute("CREATE TABLE borrador(id INTEGER PRIMARY KEY); CREATE VIEW borradores AS SELECT * FROM borrador")
        let error = try #require(#expect(throws: SQLiteError.self) { try db.migrateSchema(to: Self.notes()) })
        #expect(error.message.contains("view borradores no longer compiles after the schema migration"))
        #expect(try db.tableExists("borrador"))
    }

    // MARK: Renaming, and the trap

    @Test func aRenamingIdentifierKeepsEveryValueOfTheColumn() throws {
        let before = try values("SELECT id, fecha FROM nota ORDER BY id")
        let changes = try migrate(to: Self.notes(
            Self.notaColumns(replacing: "fecha", with: .column("momento", .text, renamedFrom: "fecha")),
            indexes: [.index("nota_on_fecha", on: ["momento"])]))
        #expect(changes == [.renameColumn("fecha", to: "momento", table: "nota")])
        #expect(try values("SELECT id, momento FROM nota ORDER BY id") == before)
        #expect(try db.indexes(on: "nota").first?.columns == ["momento"], "the index follows")
    }

    @Test func withoutARenamingIdentifierARenameIsADropAndAnAddThatIsRefused() throws {
        let momento = Self.notes(
            Self.notaColumns(replacing: "fecha", with: .column("momento", .text)),
            indexes: [.index("nota_on_momento", on: ["momento"])])
        let plan = try db.schemaChanges(to: momento)
        #expect(plan == [
            .dropIndex("nota_on_fecha", table: "nota"),
            .dropColumn("fecha", table: "nota"),
            .addColumn(.column("momento", .text), table: "nota"),
            .createIndex(.index("nota_on_momento", on: ["momento"]), table: "nota"),
        ])

        let error = try #require(#expect(throws: SchemaMigrationError.self) { try db.migrateSchema(to: momento) })
        guard case let .wouldLoseData(problems, _) = error else { Issue.record("\(error)"); return }
        #expect(problems.map { "\($0.table).\($0.column ?? "")" } == ["nota.fecha"])
        #expect(error.description.contains("if one of them is fecha renamed, declare it with renamedFrom: \"fecha\""))
        #expect(error.description.contains("dataLoss: .allow(columns: [\"nota\": [\"fecha\"]])"))
        #expect(error.description.contains(db.path))
        #expect(try db.schema() == Self.notes(), "nothing changed")

        try migrate(to: momento, dataLoss: .allow(columns: ["nota": ["fecha"]]))
        #expect(try db.scalar("SELECT count(*) FROM nota WHERE momento IS NULL", as: Int.self) == 300)
    }

    @Test func renamingATableKeepsItsRowsAndTheReferencesToIt() throws {
        let before = try values("SELECT * FROM nota ORDER BY id")
        let schema = DeclaredSchema([
            .table(
                "cuaderno", renamedFrom: "carpeta", primaryKey: ["id"],
                columns: [.column("id", .integer), .column("titulo", .text, notNull: true, renamedFrom: "nombre")],
                unique: [["titulo"]]),
            .table(
                "nota", primaryKey: ["id"],
                columns: Self.notaColumns(replacing: "carpeta_id", with: .column("cuaderno_id", .integer, renamedFrom: "carpeta_id")),
                foreignKeys: [.foreignKey(["cuaderno_id"], references: "cuaderno", columns: ["id"], onDelete: .cascade)],
                indexes: [.index("nota_on_fecha", on: ["fecha"])]),
            Self.adjunto,
        ])
        let changes = try migrate(to: schema)
        #expect(changes == [
            .renameTable("carpeta", to: "cuaderno"),
            .renameColumn("nombre", to: "titulo", table: "cuaderno"),
            .renameColumn("carpeta_id", to: "cuaderno_id", table: "nota"),
        ])
        #expect(try values("SELECT * FROM nota ORDER BY id") == before)
        #expect(try values("SELECT titulo FROM cuaderno ORDER BY id") == [[.text("Casa")], [.text("Trabajo")], [.text("Viajes")]])
        try db.execute("DELETE FROM adjunto; DELETE FROM cuaderno WHERE id = 1")
        #expect(try db.scalar("SELECT count(*) FROM nota", as: Int.self) == 200, "ON DELETE CASCADE follows the rename")
    }

    @Test func renamesMayChainAndAFreedNameMayBeReused() throws {
        try db.execute("CREATE TABLE par(a TEXT, b TEXT); INSERT INTO par VALUES ('uno', 'dos')")
        let schema = Self.notes(more: [.table("par", columns: [
            .column("b", .text, renamedFrom: "a"), .column("c", .text, renamedFrom: "b"), .column("a", .integer),
        ])])
        let changes = try migrate(to: schema)
        #expect(changes == [
            .renameColumn("b", to: "c", table: "par"), .renameColumn("a", to: "b", table: "par"),
            .addColumn(.column("a", .integer), table: "par"),
        ])
        #expect(try values("SELECT a, b, c FROM par") == [[.null, .text("uno"), .text("dos")]])
    }

    @Test func twoColumnsClaimingOneOldColumnIsASplitThatNeedsAMapping() throws {
        let split = Self.notes(
            Self.notaColumns(replacing: "fecha", with: nil) + [
                .column("dia", .text, renamedFrom: "fecha"), .column("hora", .text, renamedFrom: "fecha"),
            ],
            indexes: [])
        let error = try #require(#expect(throws: SchemaMigrationError.self) { try db.schemaChanges(to: split) })
        guard case let .needsMappedMigration(problems, _) = error else { Issue.record("\(error)"); return }
        #expect(problems.map(\.column) == ["fecha"])
        #expect(error.description.contains("nota.fecha is the renaming identifier of columns dia and hora"))
        #expect(error.description.contains("EntityMapping"))
    }

    // MARK: Nullability, defaults, types

    @Test func anOptionalColumnBecomesRequiredWhenGivenADefault() throws {
        let before = try values("SELECT id, coalesce(prioridad, 3) FROM nota ORDER BY id")
        let changes = try migrate(to: Self.notes(Self.notaColumns(
            replacing: "prioridad", with: .column("prioridad", .integer, notNull: true, default: 3))))
        #expect(changes.map(\.description) == [
            "rebuild table nota: change column \"prioridad\" INTEGER to \"prioridad\" INTEGER NOT NULL DEFAULT 3 "
                + "(NULLs become 3)",
        ])
        #expect(try values("SELECT id, prioridad FROM nota ORDER BY id") == before)
        #expect(try db.tableInfo("nota").last?.isNotNull == true)
        #expect(try db.indexes(on: "nota").map(\.name) == ["nota_on_fecha"])
        #expect(try db.foreignKeys(of: "nota").first?.onDelete == "CASCADE")
        #expect(try db.foreignKeys(of: "adjunto").first?.parentTable == "nota")
        #expect(throws: SQLiteError.self) { try db.execute("INSERT INTO nota(texto, prioridad) VALUES ('x', NULL)") }
    }

    @Test func anOptionalColumnWithNullsCannotBecomeRequiredWithoutADefault() throws {
        let error = try #require(#expect(throws: SchemaMigrationError.self) {
            try db.migrateSchema(to: Self.notes(Self.notaColumns(
                replacing: "prioridad", with: .column("prioridad", .integer, notNull: true))))
        })
        #expect(error.description.contains("nota.prioridad becomes NOT NULL without a default while rows hold NULL"))
        // A column without NULLs needs no default.
        try migrate(to: Self.notes(Self.notaColumns(replacing: "fecha", with: .column("fecha", .text, notNull: true))))
    }

    @Test func aRequiredColumnBecomesOptionalAndDefaultsChange() throws {
        let before = try values("SELECT * FROM nota ORDER BY id")
        let changes = try migrate(to: Self.notes(Self.notaColumns(replacing: "texto", with: .column("texto", .text))
            .map { $0.name == "categoria" ? .column("categoria", .text, default: "general") : $0 }))
        guard case let .rebuildTable(_, reasons) = try #require(changes.first), changes.count == 1 else {
            Issue.record("\(changes)")
            return
        }
        #expect(reasons.count == 2)
        #expect(try values("SELECT * FROM nota ORDER BY id") == before, "existing NULLs stay NULL")
        try db.execute("INSERT INTO nota(id, texto) VALUES (1000, NULL)")
        #expect(try db.scalar("SELECT categoria FROM nota WHERE id = 1000", as: String.self) == "general")
    }

    @Test func aTypeChangeOfAColumnHoldingValuesNeedsAMapping() throws {
        let error = try #require(#expect(throws: SchemaMigrationError.self) {
            try db.migrateSchema(to: Self.notes(Self.notaColumns(replacing: "fecha", with: .column("fecha", .integer))))
        })
        #expect(error.description.contains("nota.fecha changes type from TEXT to INTEGER while it holds values"))
        #expect(try db.schema() == Self.notes())
        // Without values, the type changes by rebuilding.
        try db.execute("UPDATE nota SET categoria = NULL")
        try migrate(to: Self.notes(Self.notaColumns(replacing: "categoria", with: .column("categoria", .integer))))
        #expect(try db.tableInfo("nota")[4].type == "INTEGER")
    }

    // MARK: Indexes and constraints

    @Test func indexesAreCreatedDroppedAndChanged() throws {
        try db.execute("CREATE INDEX nota_on_texto ON nota(texto)")
        let changes = try migrate(to: Self.notes(indexes: [
            .index("nota_on_fecha", on: ["fecha", "id"]),
            .index("nota_on_categoria", on: ["categoria"], where: "categoria IS NOT NULL"),
        ]))
        #expect(Set(changes) == [
            .dropIndex("nota_on_fecha", table: "nota"), .dropIndex("nota_on_texto", table: "nota"),
            .createIndex(.index("nota_on_fecha", on: ["fecha", "id"]), table: "nota"),
            .createIndex(.index("nota_on_categoria", on: ["categoria"], where: "categoria IS NOT NULL"), table: "nota"),
        ])
        #expect(try db.indexes(on: "nota").map(\.name) == ["nota_on_categoria", "nota_on_fecha"])
        #expect(try db.indexes(on: "nota").last?.columns == ["fecha", "id"])
    }

    @Test func uniqueConstraintsAndForeignKeysChangeByRebuildingKeepingRows() throws {
        let notas = try values("SELECT * FROM nota ORDER BY id")
        let adjuntos = try values("SELECT * FROM adjunto ORDER BY id")
        let changes = try migrate(to: Self.notes(
            unique: [["texto"]], foreignKeys: [],
            adjunto: .table(
                "adjunto", primaryKey: ["id"],
                columns: [.column("id", .integer), .column("nota_id", .integer, notNull: true), .column("nombre", .text)],
                unique: [["nota_id", "nombre"]],
                foreignKeys: [.foreignKey(["nota_id"], references: "nota", columns: ["id"], onDelete: .cascade)])))
        #expect(changes.map(\.description) == [
            "rebuild table nota: add unique (texto); drop FOREIGN KEY (\"carpeta_id\") REFERENCES \"carpeta\" (\"id\") ON DELETE CASCADE",
            "rebuild table adjunto: add unique (nota_id, nombre); add FOREIGN KEY (\"nota_id\") REFERENCES \"nota\" (\"id\") ON DELETE CASCADE; "
                + "drop FOREIGN KEY (\"nota_id\") REFERENCES \"nota\" (\"id\")",
        ])
        #expect(try values("SELECT * FROM nota ORDER BY id") == notas)
        #expect(try values("SELECT * FROM adjunto ORDER BY id") == adjuntos)
        #expect(try db.indexes(on: "nota").map(\.name).contains("nota_on_fecha"))
        try db.execute("DELETE FROM nota WHERE id = 3")
        #expect(try db.scalar("SELECT count(*) FROM adjunto", as: Int.self) == 99, "the new ON DELETE CASCADE")
    }

    @Test func aForeignKeyToTheImplicitPrimaryKeyMatchesOneNamingIt() throws {
        try db.execute("CREATE TABLE enlace(id INTEGER PRIMARY KEY, nota_id INTEGER REFERENCES nota)")
        let enlace: DeclaredSchema.Table = .table(
            "enlace", primaryKey: ["id"], columns: [.column("id", .integer), .column("nota_id", .integer)],
            foreignKeys: [.foreignKey(["nota_id"], references: "nota", columns: ["id"])])
        #expect(try db.schemaChanges(to: Self.notes(more: [enlace])).isEmpty)
    }

    @Test func aTableThatMustBeRebuiltButHasUndeclarableFeaturesIsRefused() throws {
        try db.execute("""
            CREATE TABLE medida(id INTEGER PRIMARY KEY AUTOINCREMENT, valor REAL CHECK (valor >= 0));
            INSERT INTO medida(valor) VALUES (1.5);
            """)
        let medida = { (notNull: Bool) in
            Self.notes(more: [.table("medida", primaryKey: ["id"], columns: [
                .column("id", .integer), .column("valor", .real, notNull: notNull, default: notNull ? 0 : nil),
                .column("unidad", .text),
            ])])
        }
        // Adding a column needs no rebuild: allowed.
        try db.migrateSchema(to: medida(false))
        let error = try #require(#expect(throws: SchemaMigrationError.self) { try db.migrateSchema(to: medida(true)) })
        #expect(error == .cannotRebuild(table: "medida", features: ["AUTOINCREMENT", "a CHECK constraint"], database: db.path))
        #expect(error.description.contains("rebuildTable(_:definition:options:copying:)"))
    }

    // MARK: Invalid declarations

    @Test func aDeclarationThatContradictsItselfIsRefusedNamingEachProblem() throws {
        let schema: DeclaredSchema = [
            .table("a", primaryKey: ["id", "missing"], columns: [.column("id", .integer), .column("id", .text)],
                   foreignKeys: [.foreignKey(["id"], references: "nowhere")],
                   indexes: [.index("shared", on: ["x"])]),
            .table("b", columns: [.column("v", .text)], unique: [[], ["v", "V"]], indexes: [.index("shared", on: ["v"])]),
            .table("A", columns: [.column("w", .text)]),
            .table("c", columns: [.column("v", .text)], indexes: [.index("B", on: ["v"])]),
            .table("store_migrations_levels", columns: [.column("w", .text)]),
            // Wider than the tables whose columns are compared pairwise.
            .table("wide", columns: (0..<40).map { .column("c\($0)", .integer) } + [.column("C7", .text), .column("Ü", .text), .column("ü", .text)]),
            .table("narrow", columns: [.column("Ü", .text), .column("k", .text), .column("ü", .text), .column("K", .text)]),
        ]
        let error = try #require(#expect(throws: SchemaMigrationError.self) { try db.migrateSchema(to: schema) })
        guard case let .invalidDeclaration(problems, _) = error else { Issue.record("\(error)"); return }
        let messages = problems.map(\.description)
        #expect(messages.contains("a.id is declared twice"))
        #expect(problems.filter { $0.message == "is declared twice" }.map(\.description)
            == ["a.id is declared twice", "wide.C7 is declared twice", "wide.ü is declared twice", "narrow.ü is declared twice",
                "narrow.K is declared twice"])
        #expect(messages.contains("a.missing is named in the primary key but the table does not declare it"))
        #expect(messages.contains { $0.hasPrefix("table a has FOREIGN KEY (\"id\") REFERENCES \"nowhere\", but the schema declares no table nowhere") })
        #expect(messages.contains("a.x is named in index shared but the table does not declare it"))
        #expect(messages.contains { $0.contains("declares index shared, a name table a also gives an index") })
        #expect(messages.contains("table b has unique () without columns"))
        #expect(messages.contains("table b has unique (v, V) that lists a column twice"))
        #expect(messages.contains("table A is declared twice; merge the two declarations"))
        #expect(messages.contains("table c declares index b, which is also the name of a table"))
        #expect(messages.contains { $0.hasPrefix("table store_migrations_levels is a table of the migration store") })
        #expect(try db.schema() == Self.notes())
    }

    // MARK: In a store's migration

    @Test func inAStoreTheMigrationCommitsWithItsLevelOrNotAtAll() throws {
        let store = SQLiteStore(url: scratch.file("test.sqlite"))
        let duplicates = Self.notes(unique: [["categoria"]])
        let error = try #require(#expect(throws: SQLiteError.self) {
            try store.apply(sqliteStep("2.0") { db in
                try db.migrateSchema(to: Self.notes(Self.notaColumns + [.column("guid", .text)]))
                try db.migrateSchema(to: duplicates)   // the categories repeat: the rebuild's copy fails
            })
        })
        #expect(error.isConstraintViolation)
        #expect(try store.readRecords().isEmpty)
        #expect(try store.read { try $0.schema() } == Self.notes(), "the first migration was rolled back too")

        let log = ProgressLog()
        let v2 = Self.notes(
            Self.notaColumns(replacing: "fecha", with: .column("momento", .text, renamedFrom: "fecha"))
                + [.column("guid", .text)],
            indexes: [.index("nota_on_fecha", on: ["momento"])])
        let outcome = try store.apply(sqliteStep("2.0", run: log.run()) { db in
            try db.migrateSchema(to: v2)
        })
        #expect(outcome.isApplied)
        #expect(try store.read { try $0.schemaChanges(to: v2) }.isEmpty)
        #expect(try store.read { try $0.scalar("SELECT count(momento) FROM nota", as: Int.self) } == 300)
        #expect(log.fractions == [0.5, 1])
    }

    // MARK: Changes as values

    @Test func changesAreReadableAndCodable() throws {
        let changes = try db.schemaChanges(to: Self.notes(
            Self.notaColumns(replacing: "prioridad", with: .column("prioridad", .integer, notNull: true, default: 1))
                + [.column("guid", .text)],
            renamedFrom: "nota", more: [.table("etiqueta", columns: [.column("nombre", .text)])]))
        let decoded = try JSONDecoder().decode([SchemaChange].self, from: JSONEncoder().encode(changes))
        #expect(decoded == changes)
        #expect(changes.map(\.description) == [
            "rebuild table nota: add column \"guid\" TEXT; change column \"prioridad\" INTEGER to "
                + "\"prioridad\" INTEGER NOT NULL DEFAULT 1 (NULLs become 1)",
            "create table etiqueta",
        ])
    }
}
