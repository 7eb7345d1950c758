/// How a batch of a resumable migration commits in WAL mode: at `synchronous = NORMAL`, so that
/// its `COMMIT` does not wait for the disk (`FULL`, SQLite's default, syncs the WAL at every
/// commit), and, when the batch finishes its step, followed by a checkpoint that syncs the WAL.
///
/// Why this keeps every row exactly once: a batch's rows and its cursor are frames of one
/// transaction in the WAL, and a power loss or an operating-system crash loses a suffix of the
/// transactions a sync had not reached, whole, never part of one (SQLite's WAL stays consistent
/// at `NORMAL`). Such a loss takes the last batches back, rows and cursor together, and the next
/// launch does them again from the cursor it finds. A killed process loses nothing committed:
/// its writes are in the operating system's cache.
///
/// Why a checkpoint after the last batch rather than its commit at the connection's own level:
/// SQLite refuses to change the level inside a transaction, and whether a batch finishes its
/// step is known only once its body has returned. The checkpoint syncs the WAL before copying
/// it, so a step reported applied is on disk as an ordinary step's commit would be. The automatic
/// checkpoint after that commit would copy the same pages, most often, and then finds nothing to
/// do. A reader's snapshot can keep the checkpoint from copying anything, and SQLite then skips
/// the sync: a write transaction at the connection's own level takes its place, because its
/// commit syncs the whole WAL, the batches' frames with its own. Without it, a power loss could
/// take back a step already reported applied, after another store's step that depends on it ran.
///
/// Why only in WAL mode: with a rollback journal, `NORMAL` can corrupt the database on a power
/// loss. A connection already at `NORMAL` or `OFF` (from the store's `configure`) is left as it
/// is, and so is its checkpointing.
struct BatchCommitSync {
    /// The connection's own `synchronous` level, set back when the batch's transaction ends.
    private let own: Int

    /// Lowers `db`'s `synchronous` level to `NORMAL` for the batch's transaction, or returns
    /// `nil` when the connection is not in WAL mode or already at `NORMAL` or below. Called
    /// outside a transaction: SQLite refuses the change inside one.
    init?(relaxing db: Database) throws {
        guard let row = try db.row("SELECT synchronous, journal_mode FROM pragma_synchronous, pragma_journal_mode"),
              let own: Int = try row[0], own > Self.normal,
              let journal: String = try row[1], journal.lowercased() == "wal"
        else { return nil }
        try db.execute("PRAGMA synchronous = \(Self.normal)")
        self.own = own
    }

    /// Sets `db`'s own level back once the batch's transaction has ended and, when the batch
    /// finished its step, syncs the WAL. Nothing here can fail the batch, which has committed or
    /// rolled back already: a level not set back makes the store close the connection after the
    /// step (it differs from the one it opened with), and a sync that fails leaves the WAL to the
    /// next commit's.
    func end(_ db: Database, finishingStep: Bool) {
        try? db.execute("PRAGMA synchronous = \(own)")
        if finishingStep, (try? Self.checkpointCopiesEveryFrame(db)) != true { try? Self.commitSyncingWAL(db) }
    }

    /// Checkpoints `db`'s WAL, and tells whether every frame reached the database file, in which
    /// case the WAL was synced first. Fewer means a reader's snapshot held some back, and perhaps
    /// all, when SQLite syncs nothing.
    private static func checkpointCopiesEveryFrame(_ db: Database) throws -> Bool {
        guard let row = try db.row("PRAGMA wal_checkpoint(PASSIVE)"),
              let frames: Int = try row[1], let copied: Int = try row[2]
        else { return false }
        return copied >= frames
    }

    /// A write transaction whose commit, at the connection's own level, syncs the WAL. It writes
    /// `user_version` back unchanged: the smallest write that still appends a frame (the header
    /// page), and one that touches neither the user's tables nor the store's records.
    private static func commitSyncingWAL(_ db: Database) throws {
        try db.execute("BEGIN IMMEDIATE")
        do {
            let version = try db.scalar("PRAGMA user_version", as: Int.self) ?? 0
            try db.execute("PRAGMA user_version = \(version)")
            try db.execute("COMMIT")
        } catch {
            try? db.execute("ROLLBACK")
            throw error
        }
    }

    private static let normal = 1
}
