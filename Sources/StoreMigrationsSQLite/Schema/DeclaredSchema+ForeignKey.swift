import StoreMigrations

extension DeclaredSchema {
    /// A foreign key: columns of a table that refer to the key of another.
    public struct ForeignKey: Sendable, Hashable, Codable, CustomStringConvertible {
        /// What happens to referring rows when the row they refer to is deleted or its key changes.
        public enum Action: String, Sendable, Hashable, Codable {
            /// Nothing happens; the change fails if referring rows remain when the check runs.
            case noAction = "NO ACTION"
            /// The change fails at once while referring rows exist.
            case restrict = "RESTRICT"
            /// The referring columns become `NULL`.
            case setNull = "SET NULL"
            /// The referring columns take their default.
            case setDefault = "SET DEFAULT"
            /// Referring rows are deleted, or take the new key.
            case cascade = "CASCADE"
        }

        /// The referring columns of this table, in order.
        public let columns: [String]
        /// The table referred to.
        public let parentTable: String
        /// The columns referred to, in order; empty for the parent's primary key.
        public let parentColumns: [String]
        /// What happens when a parent row is deleted.
        public let onDelete: Action
        /// What happens when a parent row's key changes.
        public let onUpdate: Action

        /// Declares a foreign key.
        ///
        /// ```swift
        /// .foreignKey(["nota_id"], references: "nota", columns: ["id"], onDelete: .cascade)
        /// ```
        public static func foreignKey(
            _ columns: [String], references parentTable: String, columns parentColumns: [String] = [],
            onDelete: Action = .noAction, onUpdate: Action = .noAction
        ) -> ForeignKey {
            ForeignKey(
                columns: columns, parentTable: parentTable, parentColumns: parentColumns,
                onDelete: onDelete, onUpdate: onUpdate)
        }

        /// The foreign key as written in `CREATE TABLE`.
        public var description: String { definitionSQL }
    }
}
