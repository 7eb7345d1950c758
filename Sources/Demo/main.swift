import Foundation
import NotesApp
import StoreMigrations

/// `swift run demo [--dir PATH] [--rows N] [--kill-after SECONDS]`: creates the stores of version
/// 1.0 of a notes app with legacy data (in an empty or new directory), then launches version 2.0
/// twice: the first launch migrates, the second finds nothing to do. Given a directory that holds
/// the stores already (a run killed part-way), it resumes the launch of 2.0 instead: what was
/// applied stays applied, the rest runs.
func section(_ title: String) {
    Console.line("\n== \(title)")
}

func seconds(since start: ContinuousClock.Instant) -> Double {
    (ContinuousClock.now - start).seconds
}

/// The report without its list of steps, which the progress lines already gave one by one.
func summary(of report: MigrationReport) -> String {
    let applied = report.steps.filter { $0.outcome == .applied }.count
    var lines = ["Migration to app version \(report.appVersion): "
        + (report.steps.isEmpty ? "nothing to do" : "\(applied) of \(report.steps.count) step\(report.steps.count == 1 ? "" : "s") applied")
        + String(format: " in %.3f s", report.duration) + (report.succeeded ? "." : ", with failures.")]
    for manager in report.managers {
        let before = manager.levelBefore?.description ?? "none", after = manager.levelAfter?.description ?? "none"
        lines.append("  \(manager.name): level \(before == after ? before : "\(before) → \(after)")")
    }
    return lines.joined(separator: "\n")
}

func runDemo() throws {
    let start = ContinuousClock.now
    let options = try DemoOptions(arguments: Array(CommandLine.arguments.dropFirst()))
    if options.showsHelp {
        Console.line(DemoOptions.usage)
        return
    }
    if let killAfter = options.killAfter { SelfKill.schedule(after: killAfter) }
    let directory = options.directory
        ?? FileManager.default.temporaryDirectory.appendingPathComponent("store-migrations-demo-\(UUID().uuidString)")
    let app = LegacyNotesApp(directory: directory)

    switch app.state() {
    case .foreign(let unknown):
        throw DemoError.foreignDirectory(directory, unknown: unknown)
    case .created where try NotesMigrations.coordinator(for: app).plan().isUpToDate:
        // A run that finished: nothing is left to resume.
        section("Launching \(NotesMigrations.appVersion) again in \(directory.path)")
        Console.line("  a previous run migrated these stores to \(NotesMigrations.appVersion) already: nothing is pending")
    case .created:
        section("Resuming the launch of \(NotesMigrations.appVersion) in \(directory.path)")
        Console.line("  the 1.0 stores are there already: what a previous run applied stays applied, the rest runs")
    case .partlyCreated, .empty:
        if app.state() == .partlyCreated {
            Console.line("A previous run was killed while writing the 1.0 stores (nothing was migrated): writing them again.")
            try app.removePartialStores()
        }
        section("Version 1.0 of the notes app, as users have it (\(directory.path))")
        let setUpStart = ContinuousClock.now
        try app.create(notes: options.rows) { Console.line("  \($0)") }
        Console.line("  \(options.rows) notes with events, tags, categories and authors; legacy preferences; thumbnails "
            + String(format: "(made in %.2f s)", seconds(since: setUpStart)))
    }
    try DataSummary.print(app)

    section("Launching version \(NotesMigrations.appVersion): the plan")
    let coordinator = try NotesMigrations.coordinator(for: app)
    let plan = try coordinator.plan()
    Console.line(plan.description)
    for manager in plan.managers {
        for progress in manager.inProgress {
            Console.line("  \(manager.name)@\(progress.version) was stopped part-way by the last launch: it resumes after "
                + "\(progress.cursor) with \(progress.done) rows done, not from the start")
        }
    }
    Console.line("  " + (try PlanFiles.write(plan, to: directory)))

    section("Running it")
    let progress = LiveProgress(managers: plan.managers.map(\.name))
    coordinator.observer = { event in progress.handle(event) }
    let report = try coordinator.run()
    progress.finish()
    Console.line(progress.isTerminal ? report.description : summary(of: report))
    try DataSummary.print(app)

    section("Launching version \(NotesMigrations.appVersion) again")
    let second = try NotesMigrations.coordinator(for: app)
    let secondReport = try second.run()
    Console.line("  nothing pending: \(!secondReport.didRunAnything); the check took "
        + String(format: "%.2f ms", secondReport.duration * 1000) + " for \(secondReport.managers.count) stores")
    Console.line("\nThe stores stay in \(directory.path) for a look; run the demo again with --dir \(directory.path)"
        + " to launch 2.0 on them once more.")
    // Otherwise a --kill-after past the end would leave the user waiting for a kill that never comes.
    if let killAfter = options.killAfter, SelfKill.cancel() {
        Console.line("(--kill-after \(killAfter) s came after the end: the demo finished in "
            + String(format: "%.2f", seconds(since: start)) + " s and nothing was killed; give a shorter time to kill it mid-run)")
    }
}

do {
    try runDemo()
} catch let error as DemoError {
    Console.error("\(error)")
    exit(2)
} catch {
    Console.error("demo failed: \(error)")
    exit(1)
}
