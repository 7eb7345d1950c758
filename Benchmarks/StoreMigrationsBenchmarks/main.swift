import Foundation

// A child process of the resumable-kill workload: runs its step and exits, before any option
// is parsed (the subcommand is not one of them).
if CommandLine.arguments.dropFirst().first == ResumableKillWorkload.childCommand {
    exit(ResumableKillWorkload.runChild(Array(CommandLine.arguments.dropFirst(2))))
}

/// `swift run -c release benchmarks [--quick] [--json PATH] [--only NAME] [--stores S --per P] [--rows N] [--runs N] [--kill-every SECONDS[,SECONDS…]] [--peer-tenants N]`
struct Options {
    var quick = false
    var jsonPath: String?
    var only: String?
    var stores: Int?
    var perStore: Int?
    var rows: Int?
    /// Timed runs per workload instead of its default, e.g. many launches under callgrind.
    var runs: Int?
    /// The resumable-kill workload's intervals between SIGKILLs, each measured in turn.
    var killEvery: [Double]?
    /// The schemas django-tenants migrates beside `fleet-postgresql` (200 by default: its three
    /// executors take several minutes a thousand).
    var peerTenants: Int?

    init(arguments: [String]) {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--quick": quick = true
            case "--json": jsonPath = iterator.next()
            case "--only": only = iterator.next()
            case "--stores": stores = iterator.next().flatMap(Int.init)
            case "--per": perStore = iterator.next().flatMap(Int.init)
            case "--rows": rows = iterator.next().flatMap(Int.init)
            case "--runs": runs = iterator.next().flatMap(Int.init)
            case "--peer-tenants": peerTenants = iterator.next().flatMap(Int.init)
            case "--kill-every": killEvery = iterator.next()?.split(separator: ",").compactMap { Double($0) }
            case "--help", "-h":
                print("usage: benchmarks [--quick] [--json PATH] [--only NAME] [--stores S --per P] [--rows N] [--runs N] [--kill-every SECONDS[,SECONDS…]] [--peer-tenants N]")
                exit(0)
            default:
                FileHandle.standardError.write(Data("unknown argument \(argument); see --help\n".utf8))
                exit(2)
            }
        }
    }

    /// `--only NAME` selects the workload called NAME, or every part of a group (`postgresql`
    /// for `postgresql-steps`, `postgresql-launch`, …); not every name containing it, so that
    /// `--only launch` runs neither `deferred-launch` nor `postgresql-launch`.
    func wants(_ name: String) -> Bool { only.map { name == $0 || name.hasPrefix($0 + "-") } ?? true }
}

let options = Options(arguments: Array(CommandLine.arguments.dropFirst()))
#if DEBUG
print("note: a debug build; measure with `swift run -c release benchmarks`")
#endif
/// `runs` timed runs, unless `--runs` says otherwise.
func makeTimer(_ runs: Int) -> Timer { Timer(runs: options.runs ?? runs) }
let timer = makeTimer(options.quick ? 1 : 5)
var results: [Measurement] = []

if options.wants("launch") {
    results += try LaunchWorkload(migrationsPerStore: 100, timer: makeTimer(options.quick ? 3 : 50)).run()
}
if options.wants("scheduler") {
    let workload = SchedulerWorkload(
        stores: options.stores ?? (options.quick ? 20 : 1_000), perStore: options.perStore ?? (options.quick ? 10 : 100),
        timer: makeTimer(options.quick ? 1 : 9))
    results += try workload.run()
}
if options.wants("parallel") {
    results += try ParallelStoresWorkload(seconds: options.quick ? 0.05 : 1, timer: makeTimer(options.quick ? 1 : 3)).run()
}
let bigRows = options.rows ?? (options.quick ? 2_000 : 1_000_000)
let slowTimer = makeTimer(options.quick ? 1 : 3)
if options.wants("row-transform") { results += try RowTransformWorkload(rows: bigRows, timer: slowTimer).run() }
if options.wants("heavy-sql") { results += try HeavySQLWorkload(rows: bigRows, timer: slowTimer).run() }
if options.wants("split-field") { results += try SplitFieldWorkload(rows: bigRows, timer: slowTimer).run() }
if options.wants("preferences") {
    results += try PreferencesWorkload(keys: options.quick ? 1_000 : 100_000, timer: slowTimer).run()
}
if options.wants("cache") { results += try CacheWorkload(files: options.quick ? 200 : 20_000, timer: slowTimer).run() }
if options.wants("mapped") { results += try MappedMigrationWorkload(rows: bigRows, timer: slowTimer).run() }
// Resumable migrations, killed every 0.5 s and every 2 s in one run. `--quick` kills every 0.1 s
// a transform of 50,000 rows, so that CI goes through kills and resumes too.
if options.wants("resumable-kill") {
    for killEvery in options.killEvery ?? (options.quick ? [0.1] : [0.5, 2]) {
        results += try ResumableKillWorkload(
            rows: options.rows ?? (options.quick ? 50_000 : 1_000_000), killEvery: killEvery,
            singleAttempts: options.quick ? 3 : 5, timer: slowTimer
        ).run()
    }
}
if options.wants("batched-vs-one") { results += try BatchedVsOneWorkload(rows: bigRows, timer: slowTimer).run() }
if options.wants("deferred-launch") {
    results += try DeferredLaunchWorkload(rows: bigRows, timer: makeTimer(options.quick ? 3 : 50)).run()
}
if options.wants("upgrade-fixture") {
    results += try UpgradeFixtureWorkload(notes: options.quick ? 500 : 20_000, timer: slowTimer).run()
}
if options.wants("schema-creation") {
    results += try SchemaCreationWorkload(migrations: 500, timer: makeTimer(options.quick ? 1 : 9)).run()
}
if options.wants("fleet-sqlite") {
    // `--stores N`: one folder of N files only, e.g. for a profiler.
    results += try FleetUpToDateWorkload(
        small: options.stores ?? (options.quick ? 100 : 1_000), large: options.stores ?? (options.quick ? 1_000 : 10_000),
        timer: slowTimer
    ).run()
}
#if canImport(CLibPQ)
// The peer (django-tenants) runs at 200 schemas: at 1,000 its three executors alone take ~6 min.
if options.wants("fleet-postgresql") {
    results += try FleetPostgreSQLWorkload(
        tenants: options.stores ?? (options.quick ? 50 : 1_000), peerTenants: options.quick ? 0 : options.peerTenants ?? 200,
        tenantsInFlight: 8, connections: 8, timer: slowTimer
    ).run()
}
#endif
// Its parts one by one (`--only postgresql-transform`) or all (`--only postgresql`).
let postgreSQLParts = Set(PostgreSQLWorkload.parts.filter(options.wants))
if !postgreSQLParts.isEmpty {
    results += try PostgreSQLWorkload(
        parts: postgreSQLParts, rows: bigRows, quick: options.quick, timer: slowTimer, launchTimer: makeTimer(options.quick ? 3 : 50),
        transformTimer: makeTimer(options.quick ? 1 : 5)
    ).run()
}

print("")
printTable(results)
let encoder = JSONEncoder()
encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
let json = try encoder.encode(results)
print("")
print(String(decoding: json, as: UTF8.self))
if let path = options.jsonPath { try json.write(to: URL(fileURLWithPath: path)) }
