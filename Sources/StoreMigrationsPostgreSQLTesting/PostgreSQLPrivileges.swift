import Foundation
import StoreMigrationsPostgreSQL

/// The privileges given on one object of a dumped schema, restored by revoking what `PUBLIC`
/// has by default and granting each of them again.
struct PostgreSQLPrivileges: Codable, Equatable {
    /// One privilege, as `aclexplode` gives it.
    struct Grant: Codable, Equatable {
        /// `SELECT`, `EXECUTE`, `USAGE`…
        var privilege: String
        /// `nil` for `PUBLIC`.
        var role: String?
        /// Given `WITH GRANT OPTION`.
        var grantable: Bool
    }

    /// `TABLE "orders"`, `SEQUENCE "line_id_seq"`, `ROUTINE positive(numeric)`, unqualified;
    /// `nil` for the schema itself.
    var object: String?
    /// The grants to roles other than the owner, whom the restore makes the owner of everything.
    var grants: [Grant]

    /// The statements that give the privileges again to the object in `schema`, the current one.
    func statements(schema: String) -> [String] {
        let quote = PostgreSQLConnection.quoted
        let target = object ?? "SCHEMA \(quote(schema))"
        return ["REVOKE ALL ON \(target) FROM PUBLIC"] + grants.map { grant in
            "GRANT \(grant.privilege) ON \(target) TO \(grant.role.map(quote) ?? "PUBLIC")" + (grant.grantable ? " WITH GRANT OPTION" : "")
        }
    }

    /// How a snapshot shows them: `reader: INSERT*, SELECT; PUBLIC: EXECUTE`, `*` marking the
    /// grant option.
    var summary: String {
        var roles: [(role: String, privileges: [String])] = []
        for grant in grants {
            let role = grant.role ?? "PUBLIC"
            let privilege = grant.privilege + (grant.grantable ? "*" : "")
            if roles.last?.role == role { roles[roles.count - 1].privileges.append(privilege) } else { roles.append((role, [privilege])) }
        }
        return roles.isEmpty ? "the owner's only" : roles.map { "\($0.role): \($0.privileges.joined(separator: ", "))" }.joined(separator: "; ")
    }
}
