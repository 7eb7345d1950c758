import StoreMigrations

extension SQLiteStore {
    /// Whether a ``SQLiteStore`` may migrate and write.
    ///
    /// ```swift
    /// // A widget that shows what the app would migrate, and never changes the database.
    /// let store = SQLiteStore(url: databaseURL, access: .readOnly)
    /// let plan = try coordinator.plan()
    /// ```
    public enum Access: Sendable, Hashable {
        /// Plans, runs steps, writes and reads (the default).
        case readWrite
        /// Plans and reads only, through a connection that refuses writes and creates nothing; a
        /// step (transactional or not) or a `write` throws
        /// ``SQLiteStoreError/Reason/readOnly`` before touching the file.
        case readOnly
    }
}
