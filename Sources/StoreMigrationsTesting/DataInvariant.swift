import StoreMigrations

/// A rule of the app's own data that an upgrade must keep, checked on one store after it was
/// upgraded, with the same store as the fixture had it beside it: "every note keeps its title",
/// "the sort order survives its key's rename".
///
/// The check returns what breaks the rule, one line each, naming the table, row or key; an empty
/// array when the rule holds. Each line becomes an ``UpgradeDifference`` of kind
/// ``UpgradeDifference/Kind/invariant``.
///
/// ```swift
/// let rule = "the sort order survives"
/// let sortOrder = DataInvariant.on("preferences", as: PreferencesStore.self, rule) { before, after in
///     let old = try before.read()["sortOrder"], new = try after.read()["notes.sortOrder"]
///     guard let old, old != new else { return [] }
///     return ["key notes.sortOrder is \(new.map { "\($0)" } ?? "missing"), 1.0 had \(old)"]
/// }
/// tester.invariants.append(sortOrder)
/// ```
public struct DataInvariant: Sendable {
    /// The manager whose store the rule is about.
    public let manager: String
    /// The rule, as the diff names it.
    public let name: String
    let check: @Sendable (_ before: any MigrationStore, _ after: any MigrationStore) throws -> [String]

    /// The rule `name` on the store of `manager`, of type `Store`: `check` gets the store as the
    /// fixture had it (restored, not migrated) and the same store upgraded.
    public static func on<Store: MigrationStore>(
        _ manager: String, as type: Store.Type = Store.self, _ name: String,
        _ check: @escaping @Sendable (_ before: Store, _ after: Store) throws -> [String]
    ) -> DataInvariant {
        DataInvariant(manager: manager, name: name) { before, after in
            guard let before = before as? Store, let after = after as? Store else {
                throw UpgradeTestingError(store: manager, reason: .noSuchStore(type: "\(Store.self)"))
            }
            return try check(before, after)
        }
    }
}
