import Foundation
import StoreMigrations

/// Captures an ``/StoreMigrations/InMemoryStore`` of `Value` (records and value) as JSON, for
/// previews and tests whose stores live in memory.
///
/// ```swift
/// let tester = UpgradeTester(kinds: [InMemoryKind<[String: Int]>()]) { location in … }
/// ```
public struct InMemoryKind<Value: Codable & Sendable>: StoreFixtureKind {
    public var name: String { "in-memory \(Value.self)" }
    static var fileName: String { "store.json" }

    /// The kind for in-memory stores of `Value`.
    public init() {}

    private struct Contents: Codable {
        var records: [String: MigrationRecord]
        var value: Value
    }

    public func accepts(_ store: any MigrationStore) -> Bool { store is InMemoryStore<Value> }

    public func capture(_ store: any MigrationStore, into folder: URL) throws -> Bool {
        let store = try memory(store)
        let contents = Contents(records: try store.readRecords(), value: store.contents)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(contents).write(to: folder.appendingPathComponent(Self.fileName), options: .atomic)
        return true
    }

    public func restore(_ store: any MigrationStore, from folder: URL) throws {
        let contents = try JSONDecoder().decode(Contents.self, from: Data(contentsOf: folder.appendingPathComponent(Self.fileName)))
        try memory(store).transaction { records, value in
            records = contents.records
            value = contents.value
        }
    }

    public func snapshot(of store: any MigrationStore) throws -> [SnapshotEntry] { [] }

    /// The value, as JSON with sorted keys.
    public func contents(of store: any MigrationStore) throws -> [SnapshotEntry] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return [SnapshotEntry(.content, "value", String(decoding: try encoder.encode(try memory(store).contents), as: UTF8.self))]
    }

    private func memory(_ store: any MigrationStore) throws -> InMemoryStore<Value> {
        guard let store = store as? InMemoryStore<Value> else { throw UpgradeTestingError(store: store.description, reason: .noKind(store: name)) }
        return store
    }
}
