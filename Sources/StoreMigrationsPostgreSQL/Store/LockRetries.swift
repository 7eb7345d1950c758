import Foundation
import StoreMigrations

extension PostgreSQLStore {
    /// How a step's statements wait for table locks: each at most a short time, the step
    /// restarted from its `BEGIN` a bounded number of times when one waits longer.
    ///
    /// An `ALTER TABLE` waiting behind one long query takes its place in the table's lock queue
    /// and blocks every query that comes after it, for as long as it waits: the whole service
    /// stalls behind a report. Bounded, the statement gives up instead, the queue drains, and the
    /// step is tried again a little later (GitLab's `with_lock_retries`, Django's zero-downtime
    /// backends use the same remedy).
    ///
    /// Only table locks are bounded. The server's `lock_timeout` bounds every lock wait, rows
    /// included: a long `UPDATE` behind one row another session holds would be rolled back and
    /// redone, though its wait stalls no one else. So the step runs with `lock_timeout` off, and
    /// a second session, opened only when a try is still running half of `lockTimeout` after it
    /// began and kept for the step's later tries, watches the step's session in `pg_locks`: a
    /// wait for a table (`relation`) lock longer than `lockTimeout` (counted from the server's
    /// `waitstart`, PostgreSQL 14 and later; before 14, from when the watch first saw it) is
    /// cancelled with `pg_cancel_backend`. A wait for a row is reported once as a wait
    /// (``/StoreMigrations/MigrationEvent/waiting(_:_:)``, naming the row's holder) and lasts
    /// as long as the row is held, in the same try.
    ///
    /// ```swift
    /// let retries = PostgreSQLStore.LockRetries(lockTimeout: .seconds(1), retries: 10)
    /// let store = try PostgreSQLStore(connectionString, lockRetries: retries)
    /// orders.register("2.1", lockRetries: .off) { db in   // this step may wait as long as it takes
    ///     try db.execute("ALTER TABLE orders ALTER COLUMN total TYPE numeric(12,2)")
    /// }
    /// ```
    ///
    /// Each retry is a clean restart: the step's transaction is rolled back (releasing the
    /// advisory lock, so another replica may take its turn), the pause passes, and the step
    /// begins again, reading its record again under the lock, so a step another replica applied
    /// meanwhile is skipped. The pause after the n-th time-out is `backoff × 2ⁿ⁻¹`, at most
    /// `maximumBackoff`. When the last try times out, the step fails with
    /// ``PostgreSQLError/Kind-swift.enum/tableLockTimeout(blockerPID:blockerQuery:attempts:)``,
    /// naming the server process that held the lock and its query, as a second session saw them
    /// in `pg_blocking_pids` and `pg_stat_activity` while the step waited.
    ///
    /// Steps registered with ``/StoreMigrations/TransactionMode/none`` and the batches of
    /// resumable migrations run without it: neither can be restarted as a whole, and batches
    /// change no schema.
    public struct LockRetries: Sendable, Hashable, Codable, CustomStringConvertible {
        /// How long a statement of the step may wait for a table lock, or `nil` to leave the
        /// session's `lock_timeout` (usually none: wait for ever) and never retry.
        public var lockTimeout: Duration?
        /// How many times a step is tried again after a lock time-out.
        public var retries: Int
        /// The pause before the first retry; each next pause doubles it.
        public var backoff: Duration
        /// The longest pause between two tries.
        public var maximumBackoff: Duration

        /// Tries a step `retries + 1` times at most, each statement waiting at most `lockTimeout`
        /// for a table lock.
        public init(
            lockTimeout: Duration, retries: Int = 5, backoff: Duration = .milliseconds(500), maximumBackoff: Duration = .seconds(30)
        ) {
            self.lockTimeout = lockTimeout
            self.retries = max(0, retries)
            self.backoff = max(.zero, backoff)
            self.maximumBackoff = max(self.backoff, maximumBackoff)
        }

        /// The store's default: 2 s (as Django's zero-downtime backend), 5 retries, from 0.5 s apart.
        public static let standard = LockRetries(lockTimeout: .seconds(2))

        /// No `lock_timeout` of the store's: statements wait for their locks as long as the
        /// session's settings let them, and the step is tried once.
        public static let off = LockRetries()

        private init() {
            lockTimeout = nil
            retries = 0
            backoff = .zero
            maximumBackoff = .zero
        }

        public var description: String {
            guard let lockTimeout else { return "no lock time-out" }
            return "lock_timeout \(PostgreSQLStore.milliseconds(lockTimeout)) ms, \(retries) retries from "
                + "\(PostgreSQLStore.milliseconds(backoff)) ms apart"
        }

        /// The pause after the `timeOuts`-th time-out (from 1).
        func pause(after timeOuts: Int) -> Duration {
            min(backoff * (1 << min(timeOuts - 1, 16)), maximumBackoff)
        }
    }
}

extension MigrationManager where Store == PostgreSQLStore {
    /// Registers the migration to `version`, its statements waiting for table locks as
    /// `lockRetries` says rather than as the store's ``PostgreSQLStore/lockRetries`` does:
    /// ``PostgreSQLStore/LockRetries/off`` for a step that must wait however long it takes.
    ///
    /// ```swift
    /// orders.register("3.0", lockRetries: .off) { db in
    ///     try db.execute("LOCK TABLE orders IN ACCESS EXCLUSIVE MODE")
    ///     …
    /// }
    /// ```
    public func register(
        _ version: Version, dependsOn dependencies: [MigrationReference] = [],
        lockRetries: PostgreSQLStore.LockRetries, _ body: @escaping Body
    ) {
        register(version, dependsOn: dependencies, options: MigrationOptions(LockRetriesOption.self, lockRetries), body)
    }

    /// Registers the migration to `version` with a body that receives its
    /// ``/StoreMigrations/MigrationContext``, its statements waiting for table locks as
    /// `lockRetries` says, as the overload above.
    public func register(
        _ version: Version, dependsOn dependencies: [MigrationReference] = [],
        lockRetries: PostgreSQLStore.LockRetries, _ body: @escaping BodyWithContext
    ) {
        register(version, dependsOn: dependencies, options: MigrationOptions(LockRetriesOption.self, lockRetries), body)
    }
}

/// A migration's own lock retries, set by ``MigrationManager/register(_:dependsOn:lockRetries:_:)``
/// and read by the store's transaction.
enum LockRetriesOption: MigrationOption {
    typealias Value = PostgreSQLStore.LockRetries
}
