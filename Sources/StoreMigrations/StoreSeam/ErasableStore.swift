/// A store that can be erased to the state of a store never migrated: every manager's records
/// and all of its content gone, so that the next run replays every migration from the first.
///
/// Only ``DevelopmentMode/eraseOnFingerprintChange`` erases stores, when a developer edited a
/// migration that already ran on them. A store that does not conform is never erased: the
/// coordinator refuses the run with ``DevelopmentModeError/eraseNotSupported(store:change:)``.
///
/// A conforming store's ``erase(_:)`` must:
/// - hold the store's exclusive lock (the one its transactions take) for the whole erase;
/// - remove the records first, or in one atomic commit with the content: a crash part-way must
///   never leave content without records that make it look migrated, nor records of
///   migrations whose content is gone;
/// - leave a store that reads as never migrated: ``MigrationStore/readRecords()`` returns no
///   record, and the first migration's body sees an empty store;
/// - keep its storage usable by connections other code holds open (a database file is emptied in
///   place rather than deleted under them).
///
/// ```swift
/// extension KeychainStore: ErasableStore {
///     func erase(_ request: TransactionRequest) throws {
///         try transaction(request) { records, items in
///             records = [:]    // written with the items, in one atomic save
///             items = [:]
///         }
///     }
/// }
/// ```
public protocol ErasableStore: MigrationStore {
    /// Removes every manager's record and all the content, under the store's lock; see the
    /// protocol for the contract. `request` names no migration and takes wait reports.
    func erase(_ request: TransactionRequest) throws
}
