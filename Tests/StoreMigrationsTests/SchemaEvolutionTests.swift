import Foundation
import Testing
@testable import StoreMigrations

/// Declared schemas, on the guide's notes app: folders
/// (carpeta) own notes (nota, ON DELETE CASCADE), attachments (adjunto) refer to notes.
@Suite struct SchemaEvolutionTests {
    let scratch: SQLiteScratchDirectory
    let db: Database

    init() throws {
        scratch = try SQLiteScratchDirectory()
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
        let nota = try db.makeStatement(
            "INSERT INTO nota(carpeta_id, texto, fecha, categoria, prioridad) VALUES (?, ?, ?, ?, ?)")
        let adjunto = try db.makeStatement("INSERT INTO adjunto(nota_id, nombre) VALUES (?, ?)")
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

    // MARK: Reading the live schema

    @Test func theLiveSchemaReadsAsItsDeclaration() throws {
        let live = try db.schema()
        #expect(live == Self.notes())
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
        try fresh.execute(schema.description)
        #expect(try fresh.schema() == schema)
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
}
