// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "StoreMigrations",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "StoreMigrations", targets: ["StoreMigrations"]),
        .executable(name: "demo", targets: ["Demo"]),
        .executable(name: "benchmarks", targets: ["StoreMigrationsBenchmarks"]),
        .executable(name: "replica-demo", targets: ["ReplicaDemo"]),
    ],
    targets: [
        // Apple platforms ship SQLite as the `SQLite3` module; elsewhere the system library is
        // reached through this module map (Debian: libsqlite3-dev).
        .systemLibrary(
            name: "CSQLite",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        // libpq, for PostgreSQLStore (Debian: libpq-dev; Homebrew: libpq). Linked on Linux and
        // macOS only, so that Apple's mobile platforms build without it; the store's files are
        // guarded by `#if canImport(CLibPQ)`.
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"]), .brew(["libpq"])]
        ),
        .target(
            name: "StoreMigrations",
            dependencies: [
                .target(name: "CSQLite", condition: .when(platforms: [.linux, .android, .windows, .openbsd, .wasi])),
                .target(name: "CLibPQ", condition: .when(platforms: [.linux, .macOS])),
            ],
            // The architecture page, for people reading the sources.
            exclude: ["README.md"]
        ),
        .executableTarget(name: "Demo", dependencies: ["StoreMigrations"]),
        // A PostgreSQL server started for one run (initdb into a folder under /tmp, pg_ctl), shared
        // by the tests, the replica demo and the benchmarks; not a product.
        .target(name: "ThrowawayPostgreSQL"),
        .executableTarget(
            name: "StoreMigrationsBenchmarks",
            dependencies: [
                "StoreMigrations", .target(name: "CSQLite", condition: .when(platforms: [.linux])),
                .target(name: "CLibPQ", condition: .when(platforms: [.linux, .macOS])), "ThrowawayPostgreSQL",
            ],
            path: "Benchmarks/StoreMigrationsBenchmarks"
        ),
        // Launched, killed and launched again by the crash and multi-process tests; the test
        // target depends on it so that `swift test` builds it.
        .executableTarget(name: "CrashRunner", dependencies: ["StoreMigrations"]),
        // The replicas of a service that the PostgreSQL tests start together on one database.
        .executableTarget(name: "ReplicaRunner", dependencies: ["StoreMigrations"]),
        // `swift run replica-demo`: four replicas of a service migrating one throwaway database.
        .executableTarget(name: "ReplicaDemo", dependencies: ["StoreMigrations", "ThrowawayPostgreSQL"]),
        .testTarget(
            name: "StoreMigrationsTests",
            dependencies: ["StoreMigrations", "CrashRunner", "ReplicaRunner", "Demo", "ThrowawayPostgreSQL"]),
    ],
    swiftLanguageModes: [.v6]
)
