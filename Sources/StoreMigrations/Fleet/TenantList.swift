/// A fleet's tenants given as a list of the user's own: a few tenants, tests, or tenants read
/// from somewhere before the fleet starts.
///
/// A list is held whole; for a fleet of many thousands read from a database, write a
/// ``TenantSource`` that streams them instead.
///
/// ```swift
/// let tenants = TenantList(keys: ["acme", "globex", "initech"])
/// ```
public struct TenantList: TenantSource {
    /// The tenants, in the order fleets walk them.
    public let tenants: [Tenant]

    /// A source of `tenants`, in their order.
    public init(_ tenants: [Tenant]) {
        self.tenants = tenants
    }

    /// A source of a tenant for each of `keys`, in their order, each in `group` if given.
    public init(keys: [String], group: String? = nil) {
        self.init(keys.map { Tenant($0, group: group) })
    }

    public var description: String { "a list of \(tenants.count) tenant\(tenants.count == 1 ? "" : "s")" }

    public func makeTenantIterator() -> Iterator {
        Iterator(tenants: tenants)
    }

    /// A walk over the list.
    public struct Iterator: TenantIterator {
        private let tenants: [Tenant]
        private var index = 0

        init(tenants: [Tenant]) {
            self.tenants = tenants
        }

        public mutating func next() -> Tenant? {
            guard index < tenants.count else { return nil }
            defer { index += 1 }
            return tenants[index]
        }
    }
}
