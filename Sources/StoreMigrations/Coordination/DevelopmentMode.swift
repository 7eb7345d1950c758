/// What a coordinator does, while an app is being developed, with a store on which a migration
/// that already ran has been edited since (its fingerprint changed): off by default.
///
/// ```swift
/// #if DEBUG
/// coordinator.developmentMode = .eraseOnFingerprintChange
/// #endif
/// ```
///
/// With ``eraseOnFingerprintChange``, a developer iterating on a migration edits it and launches
/// again: the stores it ran on are erased and every migration is replayed, the edited one
/// included, as GRDB's `eraseDatabaseOnSchemaChange` does. The plan says so beforehand
/// (``MigrationPlan/Manager/developmentErase``) and erases nothing itself. Only stores with an
/// edited migration are erased, with every manager they host; the managers of other stores keep
/// their data, and a migration of theirs that depends on an erased one is not run again: the
/// replay meets the dependency again. Migrations under ``FingerprintPolicy/ignore`` are not
/// compared, so they erase nothing.
///
/// The replay from the first migration is forced only in the run that erased, whatever the
/// manager's ``FirstLaunchPolicy``: nothing is left in an erased store to say it was erased. If
/// that run stops before a manager's first migration commits, the next launch finds an empty
/// store without records and treats it as a fresh install, under the manager's first-launch
/// policy (with ``FirstLaunchPolicy/baseline``, nothing is replayed).
///
/// A release build refuses to erase (``DevelopmentModeError/refusedInReleaseBuild(store:change:)``):
/// the mode is for debug builds, where the library is compiled with `DEBUG`. A continuous
/// integration job that tests release builds opts in loudly, with
/// ``eraseOnFingerprintChange(dangerouslyAllowingReleaseBuilds:)``.
public struct DevelopmentMode: Sendable, Hashable {
    /// Whether stores with edited migrations are erased and rebuilt.
    let erasesStores: Bool
    /// Whether a release build erases too.
    let allowsReleaseBuilds: Bool
    /// Whether the library was compiled with `DEBUG`; set otherwise only by tests, to see the
    /// release build's refusal from a debug build.
    let isDebugBuild: Bool

    init(erasesStores: Bool, allowsReleaseBuilds: Bool, isDebugBuild: Bool = DevelopmentMode.compiledForDebug) {
        self.erasesStores = erasesStores
        self.allowsReleaseBuilds = allowsReleaseBuilds
        self.isDebugBuild = isDebugBuild
    }

    /// Edited migrations are handled by each manager's ``FingerprintPolicy``; nothing is erased.
    /// The default.
    public static let off = DevelopmentMode(erasesStores: false, allowsReleaseBuilds: false)

    /// A store on which an applied migration was edited is erased and rebuilt from scratch, in
    /// debug builds only; a release build refuses the run.
    public static let eraseOnFingerprintChange = DevelopmentMode(erasesStores: true, allowsReleaseBuilds: false)

    /// As ``eraseOnFingerprintChange``, and in release builds too when
    /// `dangerouslyAllowingReleaseBuilds` is `true`: for a continuous integration job that builds
    /// release, never for an app that ships, whose users' data it would erase.
    public static func eraseOnFingerprintChange(dangerouslyAllowingReleaseBuilds: Bool) -> DevelopmentMode {
        DevelopmentMode(erasesStores: true, allowsReleaseBuilds: dangerouslyAllowingReleaseBuilds)
    }

    /// Whether this build may erase a store.
    var allowsErasing: Bool { isDebugBuild || allowsReleaseBuilds }

    private static var compiledForDebug: Bool {
        #if DEBUG
        true
        #else
        false
        #endif
    }
}
