// swift-tools-version:6.0
import Foundation
import PackageDescription

// Three library products, split by what they link: an app that migrates its preferences links
// neither SQLite nor libpq, a server on PostgreSQL needs no SQLite headers.
//
// `STORE_MIGRATIONS_WITHOUT_LIBPQ=1` leaves out every target that needs libpq (the PostgreSQL
// product, its tests, the replica demo, the benchmarks): CI builds and tests the rest with libpq's
// headers and library hidden, which proves the core and SQLite products do not need them.
let withoutLibPQ = ProcessInfo.processInfo.environment["STORE_MIGRATIONS_WITHOUT_LIBPQ"] == "1"

// Apple platforms ship SQLite as the `SQLite3` module; elsewhere the system library is reached
// through CSQLite's module map (Debian: libsqlite3-dev).
let systemSQLite: Target.Dependency = .target(
    name: "CSQLite", condition: .when(platforms: [.linux, .android, .windows, .openbsd, .wasi]))

var products: [Product] = [
    .library(name: "StoreMigrations", targets: ["StoreMigrations"]),
    .library(name: "StoreMigrationsSQLite", targets: ["StoreMigrationsSQLite"]),
    .library(name: "StoreMigrationsCommand", targets: ["StoreMigrationsCommand"]),
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

    // `swift run demo`: an app's four stores upgraded from 1.0 to 2.0, resumable after a kill.
    .executableTarget(name: "demo", dependencies: ["StoreMigrations", "StoreMigrationsSQLite"], path: "Sources/Demo"),

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
    // The demo, the README's and the DocC articles' samples, and stores of every kind together.
    .testTarget(
        name: "IntegrationTests",
        dependencies: ["StoreMigrations", "StoreMigrationsSQLite", "TestSupport", "CrashRunner"]),
    .testTarget(name: "StoreMigrationsCommandTests", dependencies: ["StoreMigrations", "StoreMigrationsCommand", "TestSupport"]),
]

if !withoutLibPQ {
    products.append(.library(name: "StoreMigrationsPostgreSQL", targets: ["StoreMigrationsPostgreSQL"]))
    targets += [
        // libpq (Debian: libpq-dev; Homebrew: libpq).
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"]), .brew(["libpq"])]),
        .target(name: "StoreMigrationsPostgreSQL", dependencies: ["StoreMigrations", "CLibPQ"]),
        // A PostgreSQL server started for one run (initdb into a folder under /tmp, pg_ctl), shared
        // by the tests, the replica demo and the benchmarks; not a product.
        .target(name: "ThrowawayPostgreSQL"),
        // `swift run replica-demo`: four replicas of a service migrating one throwaway database.
        .executableTarget(
            name: "replica-demo", dependencies: ["StoreMigrationsPostgreSQL", "StoreMigrationsCommand", "ThrowawayPostgreSQL"],
            path: "Sources/ReplicaDemo"),
        // `swift run -c release benchmarks`: every workload against its raw baseline.
        .executableTarget(
            name: "benchmarks",
            dependencies: [
                "StoreMigrations", "StoreMigrationsSQLite", "StoreMigrationsPostgreSQL", systemSQLite, "CLibPQ",
                "ThrowawayPostgreSQL",
            ],
            path: "Benchmarks/StoreMigrationsBenchmarks"
        ),
        // The replicas of a service that the PostgreSQL tests start together on one database.
        .executableTarget(
            name: "ReplicaRunner", dependencies: ["StoreMigrations", "StoreMigrationsPostgreSQL"],
            path: "Tests/Fixtures/ReplicaRunner"),
        .testTarget(
            name: "StoreMigrationsPostgreSQLTests",
            dependencies: [
                "StoreMigrations", "StoreMigrationsPostgreSQL", "TestSupport", "ThrowawayPostgreSQL", "ReplicaRunner",
                "replica-demo",
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
