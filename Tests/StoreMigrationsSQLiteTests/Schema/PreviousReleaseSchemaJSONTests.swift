import Foundation
import Testing
import StoreMigrationsSQLite

/// Declared schemas and schema changes kept as JSON by the previous release (commit 5a43946,
/// `Tests/Fixtures/PreviousRelease/README.txt`) decode to what this release builds from the same
/// declarations.
@Suite struct PreviousReleaseSchemaJSONTests {
    private func fixture<T: Decodable>(_ name: String, as type: T.Type = T.self) throws -> T {
        let url = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/PreviousRelease/\(name)")
        return try JSONDecoder().decode(T.self, from: Data(contentsOf: url))
    }

    private let notes = DeclaredSchema.Table.table(
        "nota", primaryKey: ["id"],
        columns: [
            .column("id", .integer),
            .column("texto", .text, notNull: true, default: ""),
            .column("creada", .text, notNull: true, default: .expression("CURRENT_TIMESTAMP")),
            .column("momento", .text, renamedFrom: "fecha"),
            .column("peso", .real, default: 1.5),
            .column("categoria_id", .integer),
        ],
        unique: [["texto", "creada"]],
        foreignKeys: [.foreignKey(["categoria_id"], references: "categoria", columns: ["id"], onDelete: .setNull)],
        indexes: [
            .index("nota_on_momento", on: ["momento"]), .index("nota_on_texto", on: ["texto"], unique: true, where: "texto <> ''"),
        ])
    private let categories = DeclaredSchema.Table.table(
        "categoria", renamedFrom: "category", primaryKey: ["id"],
        columns: [.column("id", .integer), .column("nombre", "VARCHAR(40)", notNull: true, default: 0)])

    @Test func aDeclaredSchemaDecodes() throws {
        let schema: DeclaredSchema = [categories, notes]
        #expect((try fixture("DeclaredSchema.json", as: DeclaredSchema.self)) == schema)
    }

    @Test func everyKindOfSchemaChangeDecodes() throws {
        let changes: [SchemaChange] = [
            .dropIndex("old_index", table: "nota"),
            .renameTable("category", to: "categoria"),
            .renameColumn("fecha", to: "momento", table: "nota"),
            .dropColumn("obsoleta", table: "nota"),
            .addColumn(.column("guid", .text), table: "nota"),
            .rebuildTable(notes, reasons: [
                .addColumn(.column("texto", .text, notNull: true, default: "")),
                .dropColumn("vieja"),
                .alterColumn(from: .column("peso", .integer), to: .column("peso", .real, default: 1.5)),
                .changePrimaryKey(from: [], to: ["id"]),
                .addUnique(["texto", "creada"]),
                .dropUnique(["texto"]),
                .addForeignKey(.foreignKey(["categoria_id"], references: "categoria", columns: ["id"], onDelete: .setNull)),
                .dropForeignKey(.foreignKey(["autor_id"], references: "autor")),
            ]),
            .createTable(categories),
            .dropTable("basura"),
            .mapRows(from: "legacy_notes"),
            .createIndex(.index("nota_on_momento", on: ["momento"]), table: "nota"),
        ]
        #expect((try fixture("SchemaChange.json", as: [SchemaChange].self)) == changes)
    }
}
