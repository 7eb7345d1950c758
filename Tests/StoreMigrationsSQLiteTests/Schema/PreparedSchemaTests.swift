import Dispatch
import Foundation
import Testing
@testable import StoreMigrationsSQLite

/// A declared schema's statements and check, made once when first asked for: by the run's
/// fingerprint queue (`prepareAside`) or by the step, whichever comes first, the other finding
/// them made.
@Suite struct PreparedSchemaTests {
    static let schema: DeclaredSchema = DeclaredSchema((0..<40).map { index in
        .table("t\(index)", primaryKey: ["id"], columns: [.column("id", .integer), .column("name", .text)],
               indexes: [.index("t\(index)_on_name", on: index == 7 ? ["missing"] : ["name"])])
    })

    @Test func everyThreadAskingWhileAnotherPreparesFindsTheSameStatementsCheckAndText() {
        let prepared = PreparedSchema(Self.schema, fingerprintSuffix: "\n-- mapping label(*)")
        let expected = Found(
            statements: Self.schema.description, problems: Self.schema.problems().map(\.description),
            text: Self.schema.description + "\n-- mapping label(*)")
        #expect(expected.problems.count == 1, "the declaration's one problem: table t7's index")
        let readers = 16
        let found = FoundByReader(count: readers)
        DispatchQueue.concurrentPerform(iterations: readers + 1) { reader in
            guard reader < readers else { return prepared.prepareAside() }
            found.set(reader, Found(
                statements: prepared.statements, problems: prepared.problems.map(\.description), text: prepared.text))
        }
        #expect(found.all == Array(repeating: expected, count: readers))
        #expect(PreparedSchema(Self.schema, fingerprintSuffix: "").text == Self.schema.description)
    }

    struct Found: Equatable {
        var statements: String
        var problems: [String]
        var text: String
    }
}

/// What each reader of ``PreparedSchemaTests`` found, by reader.
private final class FoundByReader: @unchecked Sendable {
    // Unchecked: every access holds `lock`.
    private let lock = NSLock()
    private var found: [PreparedSchemaTests.Found?]

    init(count: Int) { found = Array(repeating: nil, count: count) }

    func set(_ reader: Int, _ value: PreparedSchemaTests.Found) { lock.withLock { found[reader] = value } }
    var all: [PreparedSchemaTests.Found?] { lock.withLock { found } }
}
