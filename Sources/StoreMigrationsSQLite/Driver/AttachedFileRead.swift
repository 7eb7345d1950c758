#if canImport(SQLite3)
import SQLite3
#else
import CSQLite
#endif
import Foundation

/// ``UnchangedFileRead`` on a connection kept for many files: each file is attached `immutable`
/// as the schema `tenant`, read under SQLite's shared lock with the same checks, and detached.
/// A fleet's walk thread keeps one (in its ``/StoreMigrations/WorkerResources``) for all the
/// SQLite tenants it checks: attaching a file costs less than opening and closing a connection
/// to it, most of which registers the extensions the system SQLite builds in (Benchmarks/BENCHMARKS.md,
/// issue 27).
///
/// The connection's own database is an empty temporary one, opened read-only with URI file
/// names on (which `ATTACH` of a URI needs), so that a statement naming tables without a schema,
/// as the store's records statement does, finds them in the one file attached.
///
/// Unlike opening a connection, `ATTACH` reads the file's schema straight away, before the read
/// can take its lock, and an `immutable` database never checks its cache against the file. So,
/// once the lock is held, the cache of what `ATTACH` read is dropped: the schema cookie is then
/// read from the file, under the lock, and a schema changed since makes SQLite read it again
/// before the statement runs.
final class AttachedFileRead: @unchecked Sendable {
    // @unchecked: the connection and its statements are only used with `lock` held.
    private let lock = NSLock()
    private let database: Database
    private let attachStatement: OpaquePointer
    private let detachStatement: OpaquePointer
    private var attached = 0
    /// Set when a file could not be detached: the connection then reads nothing more.
    private var isStuck = false

    /// How many files were attached: for tests to see the connection kept across reads.
    var attachedFiles: Int {
        lock.withLock { attached }
    }

    init() throws {
        database = try Database(path: "", busyTimeout: 0, mode: .immutable)
        var attach: OpaquePointer?, detach: OpaquePointer?
        guard sqlite3_prepare_v2(database.handle, "ATTACH ? AS tenant", -1, &attach, nil) == SQLITE_OK, let attach,
              sqlite3_prepare_v2(database.handle, "DETACH tenant", -1, &detach, nil) == SQLITE_OK, let detach
        else {
            let error = database.error(sqlite3_errcode(database.handle), sql: "ATTACH")
            sqlite3_finalize(attach)
            sqlite3_finalize(detach)
            throw error
        }
        attachStatement = attach
        detachStatement = detach
    }

    deinit {
        sqlite3_finalize(attachStatement)
        sqlite3_finalize(detachStatement)
    }

    /// What `body` read from the database at `path` attached `immutable` under a shared lock, or
    /// `nil` when that is not safe or did not work, or `body` gives `nil`: the caller then reads
    /// the ordinary way, as after ``UnchangedFileRead/read(path:busyTimeout:_:)``.
    func read<T>(path: String, _ body: (Database) throws -> T?) -> T? {
        lock.withLock {
            guard attach(path) else { return nil }
            defer { detach() }
            return readAttached(path: path, body)
        }
    }

    // The three steps of `read`, apart for the tests of what may happen between them; each with
    // `lock` held.

    /// Attaches the database at `path` as `tenant`: whether it did.
    func attach(_ path: String) -> Bool {
        guard !isStuck, UnchangedFileRead.ordinaryReadCanCreateFiles(beside: path) else { return false }
        // Bound without a copy (no destructor): the text is only read by the step, and unbound after it.
        let attached = UnchangedFileRead.immutableURI(path).withCString { uri in
            sqlite3_bind_text(attachStatement, 1, uri, -1, nil)
            defer {
                sqlite3_reset(attachStatement)
                sqlite3_clear_bindings(attachStatement)
            }
            return sqlite3_step(attachStatement) == SQLITE_DONE
        }
        if attached { self.attached += 1 }
        return attached
    }

    /// What `body` read from the attached database at `path` under a shared lock.
    func readAttached<T>(path: String, _ body: (Database) throws -> T?) -> T? {
        UnchangedFileRead.underSharedLock(of: "tenant", in: database, path: path) {
            sqlite3_db_release_memory(database.handle)
            return try body(database)
        }
    }

    /// Detaches the attached database; a connection that cannot is not used again.
    func detach() {
        if sqlite3_step(detachStatement) != SQLITE_DONE { isStuck = true }
        sqlite3_reset(detachStatement)
    }
}
