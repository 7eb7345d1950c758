import Foundation
import StoreMigrations

/// How the kit captures, restores and describes one kind of store.
///
/// The kit knows the stores of `StoreMigrations` (preferences files, `UserDefaults` suites and
/// cache directories); `StoreMigrationsSQLiteTesting` and `StoreMigrationsPostgreSQLTesting` add
/// theirs, and an app adds a kind for a store of its own. A kind is asked about every store of a
/// coordinator and takes the ones ``accepts(_:)`` says are its own.
public protocol StoreFixtureKind: Sendable {
    /// The kind's name, written in the fixture's manifest (`"sqlite"`); unique among the kinds.
    var name: String { get }

    /// Whether this kind captures and restores `store`.
    func accepts(_ store: any MigrationStore) -> Bool

    /// Copies `store`, records included, into the empty folder `folder`; returns `false`, and
    /// writes nothing, when the store does not exist (the app had no such store at that version).
    func capture(_ store: any MigrationStore, into folder: URL) throws -> Bool

    /// Puts the copy in `folder` in place of `store`, which has not been opened yet.
    func restore(_ store: any MigrationStore, from folder: URL) throws

    /// What an upgraded store must have in common with a fresh install, records aside: its schema,
    /// and the keys a fresh install writes.
    func snapshot(of store: any MigrationStore) throws -> [SnapshotEntry]

    /// What two fresh installs of one release must both hold, besides the ``snapshot(of:)``: the
    /// rows, the keys with their values, the files (entries of aspect
    /// ``SnapshotEntry/Aspect/content``). Compared by
    /// ``UpgradeTester/checkFreshInstall(_:referencePath:matches:)`` only; a kind that does not say
    /// compares no content.
    func contents(of store: any MigrationStore) throws -> [SnapshotEntry]

    /// Removes what `store` keeps outside its location's folder (a `UserDefaults` suite, a
    /// database schema). Called when a test is done with a location.
    func discard(_ store: any MigrationStore) throws
}

extension StoreFixtureKind {
    /// Nothing outside the location's folder.
    public func discard(_ store: any MigrationStore) throws {}

    /// No content compared.
    public func contents(of store: any MigrationStore) throws -> [SnapshotEntry] { [] }
}
