import Testing
@testable import StoreMigrations

/// A squash of the whole history sees the registered migrations in version order, each with its
/// own options and kind, however they were registered.
@Suite struct HistorySquashTests {
    typealias Store = InMemoryStore<[String]>

    @Test(arguments: [["1.0", "1.1", "1.2", "1.3"], ["1.2", "1.0", "1.3", "1.1"], ["1.3", "1.2", "1.1", "1.0"]])
    func theHistoryIsInVersionOrderWithEachMigrationsOptionsAndKind(registrationOrder: [String]) throws {
        let store = Store([], name: "library store")
        let coordinator = MigrationCoordinator(appVersion: "1.3")
        let library = try coordinator.manager("library", store: store)
        for version in registrationOrder {
            if version == "1.1" {
                library.registerResumable(Version(version)!, options: .named("m" + version)) { _, _ in .finished(processed: 0) }
            } else {
                library.register(Version(version)!, options: .named("m" + version)) { log in log.append(version) }
            }
        }
        library.squashHistory { history in
            let summary = history.versions.indices.map { position in
                "\(history.versions[position]) \(history.options[position].name ?? "-") \(history.resumable[position])"
            }
            return { log, _ in log += summary }
        }
        try coordinator.run()
        #expect(store.contents == ["1.0 m1.0 false", "1.1 m1.1 true", "1.2 m1.2 false", "1.3 m1.3 false"])
    }

    @Test func withoutAResumableMigrationNoneIsSaidToBe() throws {
        let store = Store([], name: "library store")
        let coordinator = MigrationCoordinator(appVersion: "1.1")
        let library = try coordinator.manager("library", store: store)
        library.register("1.1") { log in log.append("1.1") }
        library.register("1.0") { log in log.append("1.0") }
        library.squashHistory { history in
            let summary = history.versions.indices.map { "\(history.versions[$0]) \(history.resumable[$0])" }
            return { log, _ in log += summary }
        }
        try coordinator.run()
        #expect(store.contents == ["1.0 false", "1.1 false"])
    }
}
