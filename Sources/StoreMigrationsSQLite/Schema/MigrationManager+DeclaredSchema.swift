import StoreMigrations

extension MigrationManager where Store == SQLiteStore {
    /// Registers the migration to `version` as a migration of the database to a declared schema
    /// (``Database/migrateSchema(to:dataLoss:mappings:)``). Its fingerprint is computed from what
    /// the library can see: the schema's `CREATE` statements, each mapping's source table and
    /// columns, and `options.fingerprint` if given (the mappings' closures are not visible: give
    /// a fingerprint that changes with them). A plan reports the migration if its declaration is
    /// edited after it ran (``/StoreMigrations/MigrationFingerprint``).
    ///
    /// ```swift
    /// library.register("2.0", options: .named("notes get tags"), schema: notesV2)
    /// ```
    public func register(
        _ version: Version, dependsOn dependencies: [MigrationReference] = [], options: MigrationOptions = MigrationOptions(),
        schema: DeclaredSchema, dataLoss: DataLossPolicy = .refuse, mappings: [EntityMapping] = []
    ) {
        register(version, dependsOn: dependencies, options: options.fingerprinting(schema, mappings: mappings)) { db in
            try db.migrateSchema(to: schema, dataLoss: dataLoss, mappings: mappings)
        }
    }
}

extension MigrationOptions {
    /// These options with the fingerprint of a migration to `schema` through `mappings`: the
    /// schema's `CREATE` statements, each mapping's source table and columns, then the author's
    /// fingerprint if given, since the mappings' closures are not visible; and the schema itself,
    /// for a creation of new databases from it. The statements are written when first needed
    /// (``PreparedSchema``).
    func fingerprinting(_ schema: DeclaredSchema, mappings: [EntityMapping]) -> MigrationOptions {
        var options = self
        var suffix = ""
        for mapping in mappings {
            suffix += "\n-- mapping \(mapping.source)(\(mapping.columns?.joined(separator: ", ") ?? "*"))"
        }
        if let given = fingerprint { suffix += "\n-- " + given }
        let prepared = PreparedSchema(schema, fingerprintSuffix: suffix)
        options.fingerprintText = .made(prepared)
        options[DeclaredSchemaOption.self] = prepared
        return options
    }
}
