import StoreMigrations

/// How the rows of a table of the old schema become rows of the new one, for the changes a
/// lightweight migration cannot infer (Core Data's entity mapping with a custom migration
/// policy): splitting or merging columns, turning values into rows of a new table, changing a
/// column's type.
///
/// Pass mappings to ``Database/migrateSchema(to:dataLoss:mappings:)``. The source table is set
/// aside, the declared tables are created, and each source row is handed to the closure, which
/// inserts the rows it becomes into any declared tables through the ``MappingDestination``.
/// Then the source table is dropped. Tables without a mapping migrate by inference.
///
/// The guide's split of `nombre_completo` ("apellido1 apellido2, nombre") into `apellidos` and
/// `nombre`:
///
/// ```swift
/// try db.migrateSchema(to: personasV2, mappings: [
///     EntityMapping(from: "persona", columns: ["id", "nombre_completo"]) { persona, destination in
///         let completo: String? = try persona["nombre_completo"]
///         let partes = completo?.split(separator: ",", maxSplits: 1) ?? []
///         let apellidos = partes.count == 2 ? partes[0].trimmingCharacters(in: .whitespaces) : nil
///         let nombre = partes.last?.trimmingCharacters(in: .whitespaces)
///         try destination.insert(into: "persona", [
///             "id": persona["id"],
///             "apellidos": DatabaseValue(apellidos),
///             "nombre": DatabaseValue(nombre),
///         ])
///     },
/// ])
/// ```
///
/// Its category attribute turned into a `categoria` table related to notes many-to-many, one
/// category row per name however many notes share it:
///
/// ```swift
/// try db.migrateSchema(to: notasV3, mappings: [
///     EntityMapping(from: "nota") { nota, destination in
///         let notaID = try destination.insert(into: "nota", [
///             "id": nota["id"], "texto": nota["texto"], "momento": nota["momento"],
///         ])
///         guard let nombre: String = try nota["categoria"], !nombre.isEmpty else { return }
///         let categoriaID = try destination.insertOnce(
///             into: "categoria", key: .text(nombre), ["nombre": .text(nombre)])
///         try destination.insert(into: "nota_categoria", [
///             "nota_id": .integer(notaID), "categoria_id": .integer(categoriaID),
///         ])
///     },
/// ])
/// ```
///
/// Rows are streamed in the table's key order, never all held in memory, and the inserts reuse
/// one prepared statement per table and set of columns. After every `batchSize` rows the
/// migration reports its progress and checks for cancellation.
public struct EntityMapping: Sendable {
    /// The table of the old schema whose rows are mapped.
    public let source: String
    /// The columns read from each source row; `nil` for all of them.
    public let columns: [String]?
    /// How many rows are mapped between two progress reports and cancellation checks.
    public let batchSize: Int
    let transform: @Sendable (Row, MappingDestination) throws -> Void

    /// A mapping of the rows of `source`.
    ///
    /// - Parameters:
    ///   - source: The table whose rows are mapped; it is dropped afterwards.
    ///   - columns: The columns the closure reads; all of them when `nil`.
    ///   - batchSize: How many rows are mapped between two progress reports.
    ///   - transform: Called once per source row, in key order, with the row and the
    ///     destination to insert its new rows into. Throwing stops the migration, which changes
    ///     nothing.
    public init(
        from source: String, columns: [String]? = nil, batchSize: Int = 1_000,
        _ transform: @escaping @Sendable (_ row: Row, _ destination: MappingDestination) throws -> Void
    ) {
        self.source = source
        self.columns = columns
        self.batchSize = batchSize
        self.transform = transform
    }
}
