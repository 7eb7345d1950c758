import StoreMigrations
import StoreMigrationsSQLite

/// The notes database as each version of the app declares it. A declaration is the whole
/// schema: `migrateSchema(to:)` infers the lightweight changes from the live database, and a
/// column that disappears is never guessed to be a renamed one: `renamedFrom` says so.
package enum NotesSchema {
    private static func events(guid: Bool) -> DeclaredSchema.Table {
        .table(
            "event", primaryKey: ["id"],
            columns: [
                .column("id", .integer), .column("note_id", .integer, notNull: true), .column("kind", .text),
                .column("at", .text),
            ] + (guid ? [.column("guid", .text)] : []),
            foreignKeys: [.foreignKey(["note_id"], references: "note", columns: ["id"])],
            indexes: guid ? [.index("event_guid", on: ["guid"], unique: true)] : [])
    }

    private static func tags(guid: Bool) -> [DeclaredSchema.Table] {
        [
            .table(
                "tag", primaryKey: ["id"],
                columns: [.column("id", .integer), .column("name", .text, notNull: true)] + (guid ? [.column("guid", .text)] : []),
                indexes: guid ? [.index("tag_guid", on: ["guid"], unique: true)] : []),
            .table(
                "note_tag",
                columns: [.column("note_id", .integer, notNull: true), .column("tag_id", .integer, notNull: true)],
                foreignKeys: [
                    .foreignKey(["note_id"], references: "note", columns: ["id"]),
                    .foreignKey(["tag_id"], references: "tag", columns: ["id"]),
                ]),
        ]
    }

    /// 1.1, the blog's first compatibility level: events and tags get a GUID column.
    package static let v1_1: DeclaredSchema = DeclaredSchema([
        .table(
            "note", primaryKey: ["id"],
            columns: [
                .column("id", .integer), .column("title", .text, notNull: true), .column("body", .text),
                .column("date", .text, notNull: true), .column("category", .text), .column("full_name", .text),
            ],
            indexes: [.index("note_date", on: ["date"])]),
        events(guid: true),
    ] + tags(guid: true))

    /// 1.2, the guide's lightweight migration: `date` becomes `created_at`, keeping its values.
    package static let v1_2: DeclaredSchema = DeclaredSchema([
        .table(
            "note", primaryKey: ["id"],
            columns: [
                .column("id", .integer), .column("title", .text, notNull: true), .column("body", .text),
                .column("created_at", .text, notNull: true, renamedFrom: "date"), .column("category", .text),
                .column("full_name", .text),
            ],
            indexes: [.index("note_created_at", on: ["created_at"])]),
        events(guid: true),
    ] + tags(guid: true))

    /// 2.0, the guide's heavyweight migrations: the author's name split in two, and categories
    /// in a table of their own related to notes many-to-many.
    package static let v2_0: DeclaredSchema = DeclaredSchema([
        .table(
            "note", primaryKey: ["id"],
            columns: [
                .column("id", .integer), .column("title", .text, notNull: true), .column("body", .text),
                .column("created_at", .text, notNull: true), .column("last_names", .text), .column("first_name", .text),
            ],
            indexes: [.index("note_created_at", on: ["created_at"])]),
        .table(
            "category", primaryKey: ["id"],
            columns: [.column("id", .integer), .column("name", .text, notNull: true)], unique: [["name"]]),
        .table(
            "note_category", primaryKey: ["note_id", "category_id"],
            columns: [.column("note_id", .integer, notNull: true), .column("category_id", .integer, notNull: true)],
            foreignKeys: [
                .foreignKey(["note_id"], references: "note", columns: ["id"], onDelete: .cascade),
                .foreignKey(["category_id"], references: "category", columns: ["id"], onDelete: .cascade),
            ]),
        events(guid: true),
    ] + tags(guid: true))

    /// Each 1.x note becomes a 2.0 note and links to its category, created once per name.
    package static let noteMapping = EntityMapping(from: "note") { note, destination in
        let fullName: String? = try note["full_name"]
        let (lastNames, firstName) = splitFullName(fullName)
        let noteID = try destination.insert(into: "note", [
            "id": note["id"], "title": note["title"], "body": note["body"], "created_at": note["created_at"],
            "last_names": lastNames.map { .text($0) } ?? .null, "first_name": firstName.map { .text($0) } ?? .null,
        ])
        let category = (try note["category"] as String?)?.trimmingCharacters(in: .whitespaces) ?? ""
        guard !category.isEmpty else { return }
        let key = category.lowercased()
        let categoryID = try destination.insertOnce(into: "category", key: .text(key), ["name": .text(category)])
        try destination.insert(into: "note_category", ["note_id": .integer(noteID), "category_id": .integer(categoryID)])
    }

    /// "apellido1 apellido2, nombre" becomes its last names and first name; a name without a
    /// comma is kept whole as the first name.
    package static func splitFullName(_ fullName: String?) -> (lastNames: String?, firstName: String?) {
        guard let fullName else { return (nil, nil) }
        let parts = fullName.split(separator: ",", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
        return parts.count == 2 ? (parts[0], parts[1]) : (nil, fullName)
    }
}
