import Foundation

/// One tenant of a fleet: a customer, an account or a document whose stores a
/// ``MigrationFleet`` migrates with the same managers as every other tenant's.
///
/// ```swift
/// let tenants = TenantList([Tenant("acme", group: "canary"), Tenant("globex")])
/// ```
public struct Tenant: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The tenant's key, unique in its fleet: a schema's name, a file's name, an account's
    /// identifier. Plans, reports and events name the tenant by it.
    public let key: String
    /// The group the tenant belongs to, if its source says: a region, a plan, `"canary"`. A
    /// fleet run can migrate one group first (``FleetRunOptions/Canary/group(_:)``).
    public let group: String?
    /// Where the tenant's storage is, when its source knows it: the file of a tenant read from
    /// a folder of SQLite files, say. A template opens its stores there.
    public let url: URL?

    /// Creates a tenant called `key`, in `group` if given, stored at `url` if given.
    public init(_ key: String, group: String? = nil, url: URL? = nil) {
        self.key = key
        self.group = group
        self.url = url
    }

    /// The key, and the group in brackets when there is one: `acme [canary]`.
    public var description: String { group.map { "\(key) [\($0)]" } ?? key }
}
