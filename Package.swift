// swift-tools-version:6.0
import Foundation
import PackageDescription

// Library products split by what they link: an app that migrates its preferences links neither
// SQLite nor libpq, a server on PostgreSQL needs no SQLite headers. The command and the core's
// testing kit link only the core; each store's testing kit links what its store does.
//
// `STORE_MIGRATIONS_WITHOUT_LIBPQ=1` leaves out every target that needs libpq (the PostgreSQL
// product, its tests, the replica demo, the benchmarks): CI builds and tests the rest with libpq's
// headers and library hidden, which proves the core and SQLite products do not need them.
let withoutLibPQ = ProcessInfo.processInfo.environment["STORE_MIGRATIONS_WITHOUT_LIBPQ"] == "1"

// Apple platforms ship SQLite as the `SQLite3` module; elsewhere the system library is reached
// through CSQLite's module map (Debian: libsqlite3-dev).
let systemSQLite: Target.Dependency = .target(
    name: "CSQLite", condition: .when(platforms: [.linux, .android, .windows, .openbsd, .wasi]))

// SwiftPM looks up the pkg-config file of every system library in the package graph, even one
// no product being built uses (swiftlang/swift-package-manager#10549), and prints its providers'
// install hint when the file is missing: an app using only the core would be told to install
// libpq. On Linux the shim finds libpq's header without pkg-config (in /usr/include or Debian's
// /usr/include/postgresql) and the linker finds the library in the system's paths, so no lookup is
// declared there; Homebrew's keg-only libpq still needs pkg-config.
#if os(Linux)
let libPQ: Target = .systemLibrary(name: "CLibPQ")
#else
let libPQ: Target = .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.brew(["libpq"])])
#endif

var products: [Product] = [
    .library(name: "StoreMigrations", targets: ["StoreMigrations"]),
    .library(name: "StoreMigrationsSQLite", targets: ["StoreMigrationsSQLite"]),
    .library(name: "StoreMigrationsCommand", targets: ["StoreMigrationsCommand"]),
    // The upgrade-testing kit, split like the stores: an app testing only its preferences links
    // neither SQLite nor libpq.
    .library(name: "StoreMigrationsTesting", targets: ["StoreMigrationsTesting"]),
    .library(name: "StoreMigrationsSQLiteTesting", targets: ["StoreMigrationsSQLiteTesting"]),
]

var targets: [Target] = [
    // Versions, graph, planning, scheduling, coordination, the store seam, and the stores that
    // need nothing but Foundation: in-memory, preferences file, UserDefaults, cache.
    .target(
        name: "StoreMigrations",
        // The architecture page, for people reading the sources.
        exclude: ["README.md"]
    ),
    // The migration command an app's own executable embeds (status, plan, migrate, baseline): a
    // product of its own, so that an app that never runs one (on a phone) carries no argument
    // parsing, and a server links it without any store's system library.
    .target(name: "StoreMigrationsCommand", dependencies: ["StoreMigrations"]),
    .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]),
    .target(name: "StoreMigrationsSQLite", dependencies: ["StoreMigrations", systemSQLite]),
    // Fixtures, upgrade checks and seeding for the core's stores; SQLite's schema and files.
    .target(name: "StoreMigrationsTesting", dependencies: ["StoreMigrations"]),
    .target(
        name: "StoreMigrationsSQLiteTesting",
        dependencies: ["StoreMigrationsTesting", "StoreMigrationsSQLite", "StoreMigrations", systemSQLite]),

    // `swift run demo`: an app's three stores upgraded from 1.0 to 2.0, resumable after a kill.
    .executableTarget(
        name: "demo", dependencies: ["StoreMigrations", "StoreMigrationsSQLite", "NotesApp"], path: "Sources/Demo",
        exclude: ["NotesApp"]),
    // The demo's notes app (its 1.0 stores and its 2.0 migrations), shared with its upgrade tests
    // and the benchmarks, which time restoring and upgrading a fixture of it; not a product.
    .target(name: "NotesApp", dependencies: ["StoreMigrations", "StoreMigrationsSQLite"], path: "Sources/Demo/NotesApp"),

    // What the tests share: temporary folders, child processes, store fixtures.
    .target(name: "TestSupport", dependencies: ["StoreMigrations", "StoreMigrationsSQLite", systemSQLite], path: "Tests/TestSupport"),
    // Launched, killed and launched again by the crash and multi-process tests; `swift test`
    // builds every executable target, so the tests find it beside their bundle.
    .executableTarget(
        name: "CrashRunner", dependencies: ["StoreMigrations", "StoreMigrationsSQLite"], path: "Tests/Fixtures/CrashRunner"),
    .testTarget(name: "StoreMigrationsTests", dependencies: ["StoreMigrations", "TestSupport", "CrashRunner"]),
    .testTarget(
        name: "StoreMigrationsSQLiteTests",
        dependencies: ["StoreMigrations", "StoreMigrationsSQLite", "TestSupport", "CrashRunner", systemSQLite]),
    .testTarget(
        name: "StoreMigrationsTestingTests",
        dependencies: [
            "StoreMigrations", "StoreMigrationsSQLite", "StoreMigrationsTesting", "StoreMigrationsSQLiteTesting", "TestSupport",
        ]),
    // The demo, the README's and the DocC articles' samples, and stores of every kind together.
    .testTarget(
        name: "IntegrationTests",
        dependencies: ["StoreMigrations", "StoreMigrationsSQLite", "StoreMigrationsTesting", "StoreMigrationsSQLiteTesting", "TestSupport",
            "CrashRunner", "NotesApp"]),
    .testTarget(name: "StoreMigrationsCommandTests", dependencies: ["StoreMigrations", "StoreMigrationsCommand", "TestSupport"]),
]

if !withoutLibPQ {
    products += [
        .library(name: "StoreMigrationsPostgreSQL", targets: ["StoreMigrationsPostgreSQL"]),
        .library(name: "StoreMigrationsPostgreSQLTesting", targets: ["StoreMigrationsPostgreSQLTesting"]),
    ]
    targets += [
        // libpq (Debian: libpq-dev; Homebrew: libpq).
        libPQ,
        .target(name: "StoreMigrationsPostgreSQL", dependencies: ["StoreMigrations", "CLibPQ"]),
        // PostgreSQL schemas in upgrade fixtures: a dump made with libpq, restored into a throwaway schema.
        .target(
            name: "StoreMigrationsPostgreSQLTesting",
            dependencies: ["StoreMigrationsTesting", "StoreMigrationsPostgreSQL", "StoreMigrations"]),
        // A PostgreSQL server started for one run (initdb into a folder under /tmp, pg_ctl), shared
        // by the tests, the replica demo and the benchmarks; not a product.
        .target(name: "ThrowawayPostgreSQL"),
        // `swift run replica-demo`: four replicas of a service migrating one throwaway database.
        .executableTarget(
            name: "replica-demo", dependencies: ["StoreMigrationsPostgreSQL", "StoreMigrationsCommand", "ThrowawayPostgreSQL"],
            path: "Sources/ReplicaDemo"),
        // `swift run fleet-demo`: four workers share a fleet of 1,000 tenant schemas; one is killed.
        .executableTarget(
            name: "fleet-demo", dependencies: ["StoreMigrationsPostgreSQL", "ThrowawayPostgreSQL"], path: "Sources/FleetDemo"),
        // `swift run -c release benchmarks`: every workload against its raw baseline.
        .executableTarget(
            name: "benchmarks",
            dependencies: [
                "StoreMigrations", "StoreMigrationsSQLite", "StoreMigrationsPostgreSQL", systemSQLite, "CLibPQ",
                "ThrowawayPostgreSQL", "StoreMigrationsTesting", "StoreMigrationsSQLiteTesting", "NotesApp",
            ],
            path: "Benchmarks/StoreMigrationsBenchmarks"
        ),
        // The replicas of a service that the PostgreSQL tests start together on one database.
        .executableTarget(
            name: "ReplicaRunner", dependencies: ["StoreMigrations", "StoreMigrationsPostgreSQL"],
            path: "Tests/Fixtures/ReplicaRunner"),
        // The workers of one fleet that the PostgreSQL fleet tests start together and kill.
        .executableTarget(
            name: "FleetWorker", dependencies: ["StoreMigrations", "StoreMigrationsPostgreSQL"], path: "Tests/Fixtures/FleetWorker"),
        .testTarget(
            name: "StoreMigrationsPostgreSQLTests",
            dependencies: [
                "StoreMigrations", "StoreMigrationsPostgreSQL", "TestSupport", "ThrowawayPostgreSQL", "ReplicaRunner", "FleetWorker",
                "replica-demo", "fleet-demo",
                "StoreMigrationsTesting", "StoreMigrationsPostgreSQLTesting",
                // SharedSQLVocabularyTests holds both connections to one vocabulary.
                "StoreMigrationsSQLite",
            ]),
    ]
}

let package = Package(
    name: "StoreMigrations",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: products,
    targets: targets,
    swiftLanguageModes: [.v6]
)
