import Testing
import StoreMigrations
import StoreMigrationsSQLite

/// The `CREATE` statements a declared schema writes are what a declared-schema migration's
/// fingerprint hashes and what a creation from the declared schema runs: byte for byte as
/// earlier releases wrote them, or every database they recorded would show its migration edited.
@Suite struct DeclaredSchemaSQLTests {
    /// Names with quotes to double, a quote a combining mark follows, spaces and non-ASCII
    /// letters; a column without a type; defaults of every kind; composite keys, unique
    /// constraints, foreign keys with and without parent columns and actions; partial and unique
    /// indexes; a table with nothing but its columns.
    static let awkward = DeclaredSchema([
        .table("nota \"vieja\"", primaryKey: ["id"], columns: [
            .column("id", .integer),
            .column("título", .text, notNull: true, default: ""),
            .column("sin tipo", ColumnType("")),
            .column("q\"\u{301}", .real, default: 1.5),
            .column("creada", .text, notNull: true, default: .expression("CURRENT_TIMESTAMP")),
            .column("nada", .blob, default: .value(.null)),
            .column("cita", .text, default: "it's"),
        ], unique: [["título", "creada"], ["cita"]], indexes: [
            .index("nota_on_título", on: ["título"]),
            .index("nota \"única\"", on: ["cita", "id"], unique: true, where: "cita IS NOT NULL"),
        ]),
        .table("etiqueta", primaryKey: ["nota_id", "nombre"], columns: [
            .column("nota_id", .integer, notNull: true),
            .column("nombre", .text, notNull: true, default: 0),
        ], foreignKeys: [
            .foreignKey(["nota_id"], references: "nota \"vieja\"", columns: ["id"], onDelete: .cascade, onUpdate: .setNull),
            .foreignKey(["nombre"], references: "palabra"),
        ]),
        .table("palabra", columns: [.column("texto", .text)]),
    ])

    @Test func theStatementsAreWrittenAsEarlierReleasesWroteThem() {
        #expect(Self.awkward.description == #"""
            CREATE TABLE "nota ""vieja""" (
                "id" INTEGER,
                "título" TEXT NOT NULL DEFAULT '',
                "sin tipo",
                "q""\#u{301}" REAL DEFAULT 1.5,
                "creada" TEXT NOT NULL DEFAULT (CURRENT_TIMESTAMP),
                "nada" BLOB,
                "cita" TEXT DEFAULT 'it''s',
                PRIMARY KEY ("id"),
                UNIQUE ("título", "creada"),
                UNIQUE ("cita")
            );
            CREATE INDEX "nota_on_título" ON "nota ""vieja""" ("título");
            CREATE UNIQUE INDEX "nota ""única""" ON "nota ""vieja""" ("cita", "id") WHERE cita IS NOT NULL;
            CREATE TABLE "etiqueta" (
                "nota_id" INTEGER NOT NULL,
                "nombre" TEXT NOT NULL DEFAULT 0,
                PRIMARY KEY ("nota_id", "nombre"),
                FOREIGN KEY ("nota_id") REFERENCES "nota ""vieja""" ("id") ON DELETE CASCADE ON UPDATE SET NULL,
                FOREIGN KEY ("nombre") REFERENCES "palabra"
            );
            CREATE TABLE "palabra" (
                "texto" TEXT
            );
            """#)
        #expect(DeclaredSchema([]).description == "")
        #expect(Self.awkward.tables[2].description == "CREATE TABLE \"palabra\" (\n    \"texto\" TEXT\n);")
    }
}
