// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "StoreMigrations",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "StoreMigrations", targets: ["StoreMigrations"]),
        .executable(name: "demo", targets: ["Demo"]),
        .executable(name: "benchmarks", targets: ["StoreMigrationsBenchmarks"]),
    ],
    targets: [
        // Apple platforms ship SQLite as the `SQLite3` module; elsewhere the system library is
        // reached through this module map (Debian: libsqlite3-dev).
        .systemLibrary(
            name: "CSQLite",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        .target(
            name: "StoreMigrations",
            dependencies: [
                .target(name: "CSQLite", condition: .when(platforms: [.linux, .android, .windows, .openbsd, .wasi]))
            ],
            // The architecture page, for people reading the sources.
            exclude: ["README.md"]
        ),
        .executableTarget(name: "Demo", dependencies: ["StoreMigrations"]),
        .executableTarget(
            name: "StoreMigrationsBenchmarks",
            dependencies: ["StoreMigrations", .target(name: "CSQLite", condition: .when(platforms: [.linux]))],
            path: "Benchmarks/StoreMigrationsBenchmarks"
        ),
        // Launched, killed and launched again by the crash and multi-process tests; the test
        // target depends on it so that `swift test` builds it.
        .executableTarget(name: "CrashRunner", dependencies: ["StoreMigrations"]),
        .testTarget(name: "StoreMigrationsTests", dependencies: ["StoreMigrations", "CrashRunner", "Demo"]),
    ],
    swiftLanguageModes: [.v6]
)
