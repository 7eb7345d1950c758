import Foundation
import StoreMigrations

/// A declared schema registered as a migration, with what plans and runs need of it made once,
/// when first needed: its `CREATE` statements, which its fingerprint is computed from and a
/// creation from the declared schema runs, and its check (``DeclaredSchema/problems()``).
///
/// Neither is made at registration, where an app would write a schema of hundreds of tables at
/// every launch. A plan that compares fingerprints writes the statements; a run that creates a
/// new store makes both aside with the fingerprints (``prepareAside()``), while its step opens
/// the database, and the step finds them made (Benchmarks/BENCHMARKS.md).
final class PreparedSchema: MadeFingerprintText, @unchecked Sendable {
    // Unchecked: `madeStatements` and `madeProblems` are read and written holding `lock`, which
    // the thread making one holds until it is made, so another asking for it waits for that one.
    let schema: DeclaredSchema
    /// What the fingerprint's text adds after the statements: each mapping's source, then the
    /// author's fingerprint; empty when there is neither.
    private let fingerprintSuffix: String
    private let lock = NSLock()
    private var madeStatements: String?
    private var madeProblems: [SchemaMigrationError.Problem]?

    init(_ schema: DeclaredSchema, fingerprintSuffix: String) {
        self.schema = schema
        self.fingerprintSuffix = fingerprintSuffix
    }

    /// `schema.description`: its `CREATE` statements.
    var statements: String {
        lock.withLock {
            if let madeStatements { return madeStatements }
            let statements = schema.description
            madeStatements = statements
            return statements
        }
    }

    /// What contradicts itself in the declaration.
    var problems: [SchemaMigrationError.Problem] {
        lock.withLock {
            if let madeProblems { return madeProblems }
            let problems = schema.problems()
            madeProblems = problems
            return problems
        }
    }

    /// The fingerprint's text: the statements, then the suffix.
    var text: String {
        fingerprintSuffix.isEmpty ? statements : statements + fingerprintSuffix
    }

    func prepareAside() {
        _ = statements
        _ = problems
    }
}
