import StoreMigrations

/// Which tables and columns that hold data ``Database/migrateSchema(to:dataLoss:mappings:)`` may
/// drop when the declared schema no longer lists them.
///
/// Empty tables and columns holding only `NULL` are always dropped. By default nothing that
/// holds data is: a column that disappears while another appears may be a rename that lacks its
/// renaming identifier, and dropping it would lose every value.
///
/// ```swift
/// try db.migrateSchema(to: v3)                                             // refuses
/// try db.migrateSchema(to: v3, dataLoss: .allow(columns: ["nota": ["fecha"]]))
/// try db.migrateSchema(to: v3, dataLoss: .allow(tables: ["borrador"]))
/// try db.migrateSchema(to: v3, dataLoss: .allowAll)
/// ```
public struct DataLossPolicy: Sendable, Hashable {
    private let allowsAll: Bool
    private let tables: Set<String>
    private let columns: [String: Set<String>]

    /// Nothing that holds data is dropped: the migration throws ``SchemaMigrationError/wouldLoseData(problems:database:)``.
    public static let refuse = DataLossPolicy(allowsAll: false, tables: [], columns: [:])

    /// Every table and column the declaration drops goes, with its data.
    public static let allowAll = DataLossPolicy(allowsAll: true, tables: [], columns: [:])

    /// The tables and columns listed may go with their data; others that hold data may not.
    ///
    /// - Parameters:
    ///   - tables: Tables the declaration drops.
    ///   - columns: Columns the declaration drops, by table. A table may be named by its name in
    ///     the database or in the declaration.
    public static func allow(tables: [String] = [], columns: [String: [String]] = [:]) -> DataLossPolicy {
        DataLossPolicy(
            allowsAll: false, tables: Set(tables.map { $0.lowercased() }),
            columns: Dictionary(
                columns.map { ($0.key.lowercased(), Set($0.value.map { $0.lowercased() })) },
                uniquingKeysWith: { $0.union($1) }))
    }

    /// Whether the table, named `names` (its name in the database and in the declaration), may go.
    func allowsDropping(table names: [String]) -> Bool {
        allowsAll || names.contains { tables.contains($0.lowercased()) }
    }

    /// Whether `column` of the table named `names` may go.
    func allowsDropping(column: String, of names: [String]) -> Bool {
        allowsAll || names.contains { columns[$0.lowercased()]?.contains(column.lowercased()) == true }
    }
}
