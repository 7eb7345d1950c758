import StoreMigrations

extension DeclaredSchema {
    /// An index created with `CREATE INDEX`.
    public struct Index: Sendable, Hashable, Codable, CustomStringConvertible {
        /// The index's name, unique in the database.
        public let name: String
        /// The indexed columns, in key order.
        public let columns: [String]
        /// Whether the index refuses two rows with the same key.
        public let isUnique: Bool
        /// The `WHERE` condition of a partial index, as SQL; `nil` when every row is indexed.
        public let condition: String?

        /// Declares an index.
        ///
        /// ```swift
        /// .index("nota_on_momento", on: ["momento"])
        /// .index("nota_on_guid", on: ["guid"], unique: true, where: "guid IS NOT NULL")
        /// ```
        public static func index(
            _ name: String, on columns: [String], unique: Bool = false, where condition: String? = nil
        ) -> Index {
            Index(name: name, columns: columns, isUnique: unique, condition: condition)
        }

        /// The index as written in `CREATE INDEX`, without the table.
        public var description: String {
            "\(isUnique ? "unique " : "")index \(name) (\(columns.joined(separator: ", ")))"
                + (condition.map { " where \($0)" } ?? "")
        }
    }
}
