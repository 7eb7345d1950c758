/// Where the workers of one fleet claim its tenants, so that worker processes on several
/// machines run the same fleet at once and each tenant is migrated by one of them: a table of
/// claims and results in a database they all reach (`PostgreSQLFleetClaims`), no coordinator
/// process of their own.
///
/// A fleet given claims (``MigrationFleet/init(appVersion:tenants:claims:template:)``) plans
/// each tenant as before; a tenant with steps to run is claimed first, and released with its
/// result when it ends. A claim dies with its worker, so that a worker killed mid-tenant leaves
/// the tenant to the others; each step still runs exactly once, under its store's own lock.
public protocol FleetClaims: Sendable, CustomStringConvertible {
    /// Claims `tenant` for this worker, to migrate it to `appVersion`.
    ///
    /// - Throws: An error naming the claims' database when it cannot be reached.
    func claim(_ tenant: Tenant, appVersion: Version) throws -> FleetClaim
    /// Records what became of a tenant this worker claimed, and lets go of the claim.
    func release(_ tenant: Tenant, appVersion: Version, result: FleetClaimResult) throws
    /// Who did what: the tenants claimed for `appVersion`, by state and by worker.
    func status(appVersion: Version) throws -> FleetStatus
}

/// What a worker's claim on a tenant came to.
public enum FleetClaim: Sendable, Hashable {
    /// The tenant is this worker's until it is released.
    case claimed
    /// Another worker ended the tenant since this one started: migrated, or failed.
    case endedElsewhere
    /// Another worker, alive, holds the tenant: try again later.
    case busy
}

/// What became of a claimed tenant.
public enum FleetClaimResult: Sendable, Hashable {
    /// Its steps all applied, or it had none left.
    case migrated
    /// It failed; `message` says how.
    case failed(message: String)
}
