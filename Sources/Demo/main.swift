import Foundation
import StoreMigrations

/// `swift run demo [--dir PATH] [--rows N]`: creates the stores of version 1.0 of a notes app
/// with legacy data, then launches version 2.0 twice: the first launch migrates, the second finds
/// nothing to do.
struct DemoOptions {
    var directory: URL?
    var rows = 20_000

    init(arguments: [String]) throws {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--dir":
                guard let path = iterator.next() else { throw DemoError.usage("--dir needs a path") }
                directory = URL(fileURLWithPath: path, isDirectory: true)
            case "--rows":
                guard let text = iterator.next(), let rows = Int(text), rows > 0 else {
                    throw DemoError.usage("--rows needs a positive number")
                }
                self.rows = rows
            case "--help", "-h":
                throw DemoError.usage(nil)
            default:
                throw DemoError.usage("unknown argument \(argument)")
            }
        }
    }
}

enum DemoError: Error, CustomStringConvertible {
    case usage(String?)
    case directoryNotEmpty(URL)

    var description: String {
        switch self {
        case .usage(let problem):
            return (problem.map { "\($0)\n" } ?? "") + "usage: demo [--dir PATH] [--rows N]\n"
                + "  --dir PATH   where to create the 1.0 stores (default: a new temporary directory)\n"
                + "  --rows N     notes in the database (default 20000)"
        case .directoryNotEmpty(let url):
            return "\(url.path) is not empty: the demo creates fresh 1.0 stores; give it a new or empty directory."
        }
    }
}

func section(_ title: String) {
    print("\n== \(title)")
}

func runDemo() throws {
    let options = try DemoOptions(arguments: Array(CommandLine.arguments.dropFirst()))
    let directory = options.directory
        ?? FileManager.default.temporaryDirectory.appendingPathComponent("store-migrations-demo-\(UUID().uuidString)")
    if let contents = try? FileManager.default.contentsOfDirectory(atPath: directory.path), !contents.isEmpty {
        throw DemoError.directoryNotEmpty(directory)
    }
    let app = LegacyNotesApp(directory: directory)

    section("Version 1.0 of the notes app, as users have it (\(directory.path))")
    let setUpStart = ContinuousClock.now
    try app.create(notes: options.rows) { print("  \($0)") }
    let setUpTime = (ContinuousClock.now - setUpStart).components
    print("  \(options.rows) notes with events, tags, categories and authors; legacy preferences; thumbnails "
        + String(format: "(made in %.2f s)", Double(setUpTime.seconds) + Double(setUpTime.attoseconds) / 1e18))
    try DataSummary.print(app)

    section("Launching version \(NotesMigrations.appVersion): the plan")
    let coordinator = try NotesMigrations.coordinator(for: app)
    let plan = try coordinator.plan()
    print(plan)

    section("Running it")
    let progress = LiveProgress(managers: plan.managers.map(\.name))
    coordinator.observer = { event in progress.handle(event) }
    let report = try coordinator.run()
    progress.finish()
    print(report)
    try DataSummary.print(app)

    section("Launching version \(NotesMigrations.appVersion) again")
    let second = try NotesMigrations.coordinator(for: app)
    let secondReport = try second.run()
    print("  nothing pending: \(!secondReport.didRunAnything); the check took "
        + String(format: "%.2f ms", secondReport.duration * 1000) + " for \(secondReport.managers.count) stores")
    print("\nThe stores stay in \(directory.path) for a look.")
}

do {
    try runDemo()
} catch let error as DemoError {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(2)
} catch {
    FileHandle.standardError.write(Data("demo failed: \(error)\n".utf8))
    exit(1)
}
