import Foundation
import Testing
import StoreMigrations
import TestSupport

/// Which `run()` asynchronous code gets: never the blocking one, which would hold a thread of
/// the cooperative pool until the run ends. Snippets written as an app writes its `main.swift`
/// are type-checked against the built module, with warnings as errors.
@Suite struct AsyncRunOverloadTests {
    let folder: TemporaryFolder

    init() throws {
        folder = try TemporaryFolder()
    }

    /// The folder of the built modules: `Modules` beside the test bundle.
    static func modulesFolder() throws -> URL {
        for start in [Bundle.main.executableURL, Bundle.main.bundleURL] + Bundle.allBundles.map(\.bundleURL) {
            guard var folder = start?.deletingLastPathComponent() else { continue }
            for _ in 0..<4 {
                let modules = folder.appendingPathComponent("Modules")
                if FileManager.default.fileExists(atPath: modules.appendingPathComponent("StoreMigrations.swiftmodule").path) {
                    return modules
                }
                folder = folder.deletingLastPathComponent()
            }
        }
        throw ProcessTestFailure("no Modules folder with StoreMigrations.swiftmodule beside the test bundle")
    }

    /// `swiftc -typecheck` of `source` as a `main.swift`, in Swift 6 mode with warnings as errors.
    func typecheck(_ source: String) throws -> ChildProcess.Exit {
        let directory = folder.file("snippet-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let main = directory.appendingPathComponent("main.swift")
        try Data(source.utf8).write(to: main)
        let arguments = [
            "swiftc", "-typecheck", "-swift-version", "6", "-warnings-as-errors",
            "-I", try Self.modulesFolder().path, main.path,
        ]
        let child = try ChildProcess(executable: URL(fileURLWithPath: "/usr/bin/env"), arguments: arguments, logs: directory)
        guard let exit = child.wait(timeout: eventWaitBound) else {
            child.kill()
            throw ProcessTestFailure("swiftc ran past \(Int(eventWaitBound)) s")
        }
        return exit
    }

    @Test func asyncCodeGetsTheAsyncRunAndSynchronousCodeTheBlockingOneWithoutWarnings() throws {
        let exit = try typecheck("""
            import StoreMigrations

            let coordinator = MigrationCoordinator(appVersion: "1.0")
            func migrate() async throws -> MigrationReport { try await coordinator.run() }
            func migrateAndWait() throws -> MigrationReport { try coordinator.run() }
            let report = try await migrate()
            print(report, try migrateAndWait())
            """)
        #expect(exit.succeeded, "\(exit)")
        #expect(exit.standardError.isEmpty, "\(exit)")
    }

    /// Swift 6.3 ranks overloads in top-level code as in synchronous code, even after an
    /// `await`, and picked the blocking `run()` there with only a warning; it is refused instead.
    @Test func topLevelAwaitIsRefusedRatherThanBlocking() throws {
        let exit = try typecheck("""
            import StoreMigrations

            let coordinator = MigrationCoordinator(appVersion: "1.0")
            try await coordinator.run()
            """)
        #expect(exit.status == 1, "\(exit)")
        #expect(exit.standardError.contains("error: instance method 'run' is unavailable from asynchronous contexts; it "
            + "blocks its thread until the run ends; call 'try await run()' from an async function"), "\(exit)")
    }

    /// In an async test, the expression `coordinator.run()` after `await` is the async overload:
    /// the blocking one is unavailable here, so this compiles only if the async one was chosen.
    @Test func anAsyncTestAwaitsTheAsyncRun() async throws {
        let coordinator = MigrationCoordinator(appVersion: "1.0")
        let store = InMemoryStore([String]())
        try coordinator.manager("notes", store: store).register("1.0") { $0.append("ran") }
        let run: () async throws -> MigrationReport = { try await coordinator.run() }
        let report = try await run()
        #expect(report.steps.map(\.step.id.description) == ["notes@1.0"])
        #expect(store.contents == ["ran"])
    }
}
