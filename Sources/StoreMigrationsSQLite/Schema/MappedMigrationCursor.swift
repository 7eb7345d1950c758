#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import Foundation

/// Where a resumable schema migration with entity mappings stands, as each of its batches
/// records it: the schema is already the declared one, and the rows of the set-aside source
/// tables are mapped one table after the other, in key order.
struct MappedMigrationCursor: Codable, Equatable {
    struct Source: Codable, Equatable {
        /// The mapping's position in the migration's `mappings`.
        var mapping: Int
        /// The source table, renamed out of the declared table's way.
        var table: String
    }

    /// The sources in the order their rows are mapped: the order the schema plan maps them in.
    var sources: [Source]
    /// The table that keeps the rows ``MappingDestination/insertOnce(into:key:_:)`` created.
    var keyTable: String
    /// The position in ``sources`` of the table being mapped.
    var position = 0
    /// The key of the last row mapped of that table, as ``RowTransformer/cursor(after:)`` writes
    /// it; `nil` before its first row.
    var after: String?

    var encoded: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        // Strings, integers and an optional string: nothing here can fail to encode.
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self)
    }

    /// The cursor a batch recorded, checked against the mappings the migration is given now.
    init(decoding recorded: String, mappings: [EntityMapping], in db: Database) throws {
        guard let cursor = try? JSONDecoder().decode(Self.self, from: Data(recorded.utf8)) else {
            throw db.error(
                code: SQLITE_MISUSE, message: "the recorded cursor \(recorded) is not a schema migration's", sql: nil)
        }
        let recordedSources = cursor.sources.map(\.mapping).sorted()
        guard recordedSources == Array(mappings.indices), cursor.position <= cursor.sources.count else {
            throw db.error(
                code: SQLITE_MISUSE,
                message: "the schema migration was started with \(cursor.sources.count) entity mappings and is now "
                    + "given \(mappings.count); keep the mappings of a started migration as they were",
                sql: nil)
        }
        self = cursor
    }

    init(sources: [Source], keyTable: String) {
        self.sources = sources
        self.keyTable = keyTable
    }
}
