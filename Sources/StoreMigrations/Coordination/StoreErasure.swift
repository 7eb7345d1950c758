/// The stores development mode erases before a run (``DevelopmentMode``), decided from a plan
/// made with their records; or why it refuses to.
struct StoreErasure {
    /// The erasable stores, by store index, with the edited migrations that make them erased.
    private(set) var stores: [Int: (store: any ErasableStore, changes: [FingerprintChange])] = [:]
    /// Set when a store that should be erased may not be: the run throws it, erasing nothing.
    private(set) var refusal: DevelopmentModeError?

    /// Nothing to erase.
    init() {}

    /// `plan`'s managers, by position, are on the stores at `storeIndices`, held by `storesByManager`.
    init(plan: MigrationPlan, storeIndices: [Int], storesByManager: [any MigrationStore], mode: DevelopmentMode) {
        guard mode.erasesStores else { return }
        var changes: [Int: [FingerprintChange]] = [:]
        var order: [Int] = []
        for (position, manager) in plan.managers.enumerated() where !manager.changedFingerprints.isEmpty {
            let index = storeIndices[position]
            if changes[index] == nil { order.append(index) }
            changes[index, default: []] += manager.changedFingerprints
        }
        for index in order {
            let position = storeIndices.firstIndex(of: index)!
            let store = storesByManager[position]
            let storeChanges = changes[index]!
            guard let erasable = Self.erasable(store) else {
                refusal = .eraseNotSupported(store: store.description, change: storeChanges[0])
                return
            }
            guard mode.allowsErasing else {
                refusal = .refusedInReleaseBuild(store: store.description, change: storeChanges[0])
                return
            }
            stores[index] = (erasable, storeChanges)
        }
    }

    /// The store, or the one an ``AnyMigrationStore`` wraps, when it can be erased.
    private static func erasable(_ store: any MigrationStore) -> (any ErasableStore)? {
        if let erasable = store as? any ErasableStore { return erasable }
        return (store as? any WrappingStore).flatMap { erasable($0.wrapped) }
    }

    /// Erases every store, in store order; a throw leaves the stores not reached yet as they were.
    ///
    /// - Throws: ``DevelopmentModeError/eraseFailed(store:change:reason:)``.
    func erase() throws {
        for index in stores.keys.sorted() {
            let (store, changes) = stores[index]!
            do {
                try store.erase(TransactionRequest())
            } catch {
                throw DevelopmentModeError.eraseFailed(store: store.description, change: changes[0], reason: "\(error)")
            }
        }
    }
}
