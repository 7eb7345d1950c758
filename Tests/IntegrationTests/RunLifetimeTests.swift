import Foundation
import Testing
@testable import StoreMigrations
@testable import StoreMigrationsSQLite
import TestSupport

/// A finished run must not keep its stores alive: a SQLite store kept alive keeps its database
/// connection, and its file descriptors, open for the life of the process.
@Suite struct RunLifetimeTests {
    typealias Store = InMemoryStore<[String]>

    final class Released: @unchecked Sendable {
        weak var store: SQLiteStore?

        /// Whether the store is gone, waiting for it: the scheduler's thread may still be
        /// returning from the last step when the run's caller resumes.
        var eventually: Bool {
            waitUntil { store == nil }
        }
    }

    /// A coordinator migrating a new SQLite store in `folder`, which `released` watches.
    func coordinator(in folder: TemporaryFolder, watchedBy released: Released) throws -> MigrationCoordinator {
        let store = SQLiteStore(url: folder.file("library.sqlite"))
        released.store = store
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        try coordinator.manager("library", store: store).register("1.0") { db in
            try db.execute("CREATE TABLE note(id INTEGER PRIMARY KEY)")
        }
        return coordinator
    }

    @Test func aBlockingRunReleasesItsStores() throws {
        let folder = try TemporaryFolder(), released = Released()
        try coordinator(in: folder, watchedBy: released).run()
        #expect(released.eventually)
    }

    @Test func anAsyncRunReleasesItsStores() async throws {
        let folder = try TemporaryFolder(), released = Released()
        try await coordinator(in: folder, watchedBy: released).run()
        #expect(released.eventually)
    }

    // MARK: Stores in memory

    @Test
    func aFinishedRunReleasesItsStores() throws {
        weak var weakStore: Store?
        weak var weakCoordinator: MigrationCoordinator?
        do {
            let store = Store([])
            let coordinator = MigrationCoordinator(appVersion: "1")
            weakStore = store
            weakCoordinator = coordinator
            registerLogging(["1"], on: try coordinator.manager("a", store: store))
            try coordinator.run()
        }
        // Dispatch threads may hold the scheduler for a moment after the completion.
        for _ in 0..<300 where weakStore != nil { Thread.sleep(forTimeInterval: 0.01) }
        #expect(weakCoordinator == nil)
        #expect(weakStore == nil, "the store (an open SQLite connection, say) outlives its coordinator")
    }

    @Test func planningDoesNotRetainStores() throws {
        weak var weakStore: Store?
        do {
            let store = Store([])
            weakStore = store
            let coordinator = MigrationCoordinator(appVersion: "1")
            registerLogging(["1"], on: try coordinator.manager("a", store: store))
            #expect(try !coordinator.plan().isUpToDate)
        }
        #expect(weakStore == nil)
    }
}
