import Foundation
import StoreMigrations

/// A fixture or an upgrade test that cannot be carried out as written.
public struct UpgradeTestingError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// What went wrong.
    public enum Reason: Sendable, Hashable {
        /// The folder has no readable `fixture.json`.
        case notAFixture(folder: String, detail: String)
        /// No kind given to the tester accepts the store.
        case noKind(store: String)
        /// The fixture names a kind the tester was not given.
        case unknownKind(kind: String)
        /// The fixture holds a store the coordinator no longer has a manager for.
        case storeNotInCoordinator
        /// ``SeededStores/store(_:as:)`` or an invariant found no manager of that name and store type.
        case noSuchStore(type: String)
        /// Copying the store into or out of a fixture failed.
        case copyFailed(detail: String)
        /// The fixture gives privileges to a database role the server restoring it does not have.
        case missingRole(role: String)
        /// The server refused to recreate the fixture's schema (an extension or a privilege the
        /// server lacks, or a dump from a newer server); nothing of it was left.
        case restoreFailed(detail: String)
        /// Seeding at `version` ran `squash`, a squashed migration whose range goes past it.
        case seededThroughSquash(version: Version, squash: String)
    }

    /// The manager (or managers, comma-separated) of the store concerned.
    public let store: String
    /// What went wrong.
    public let reason: Reason

    /// An error about `store`.
    public init(store: String, reason: Reason) {
        self.store = store
        self.reason = reason
    }

    public var description: String {
        switch reason {
        case .notAFixture(let folder, let detail):
            return "\(folder) is not an upgrade fixture (\(detail)); capture it with UpgradeTester.capture(_:appVersion:into:)"
        case .noKind(let store):
            return "no fixture kind accepts the store of \(self.store) (\(store)); pass the kind of that store to UpgradeTester(kinds:) "
                + "(.sqlite from StoreMigrationsSQLiteTesting, .postgreSQL from StoreMigrationsPostgreSQLTesting, or one of yours)"
        case .unknownKind(let kind):
            return "the fixture's store \(store) was captured by the kind \"\(kind)\", which the tester was not given; pass it to UpgradeTester(kinds:)"
        case .storeNotInCoordinator:
            return "the fixture holds the store of \(store), for which the coordinator has no manager; "
                + "remove its folder from the fixture if the app dropped that store"
        case .noSuchStore(let type):
            return "the coordinator has no manager \(store) on a store of type \(type); ask for the name and store type the factory registers"
        case .copyFailed(let detail):
            return "copying the store of \(store) failed (\(detail)); check that its files exist and can be read and written"
        case .restoreFailed(let detail):
            return "the fixture of \(store) does not restore on this server (\(detail)); nothing of it was kept. Install what the "
                + "server reports missing (an extension, a role's privilege), or capture the fixture again on a server of this version"
        case .seededThroughSquash(let version, let squash):
            return "seeding the store of \(store) at \(version) ran the squashed migration \(squash), whose range goes past \(version): "
                + "a new store takes it whole, so nothing was captured. Seed \(version) with a tester whose coordinator leaves "
                + "that squash out (the history replayed), then check the fixture with this one"
        case .missingRole(let role):
            return "the fixture of \(store) grants privileges to the role \"\(role)\", which the server restoring it does not have; "
                + "create the role on that server (CREATE ROLE) before restoring the fixture"
        }
    }

    public var errorDescription: String? { description }
}
