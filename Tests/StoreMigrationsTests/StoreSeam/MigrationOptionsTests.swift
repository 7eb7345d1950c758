import Testing
@testable import StoreMigrations

/// The options a plan asks of every migration (name, fingerprint, post-deploy) are answered from
/// marks kept as they are set, without a lookup by kind: the marks must follow every way of
/// setting and clearing them.
@Suite struct MigrationOptionsTests {
    private enum Compression: MigrationOption { typealias Value = Bool }

    @Test func theNameFingerprintAndPostDeployMarkFollowEverySettingAndClearing() {
        var options = MigrationOptions()
        #expect(options.name == nil && options.fingerprint == nil && !options.isPostDeploy && options.isEmpty)

        options = .named("drop legacy_ref", fingerprint: "v2").postDeploy
        #expect(options.name == "drop legacy_ref")
        #expect(options.fingerprint == "v2")
        #expect(options.isPostDeploy)

        options.name = nil
        options.fingerprint = nil
        #expect(options.name == nil && options.fingerprint == nil)
        #expect(options.isPostDeploy, "clearing the name and fingerprint keeps the mark")

        options = options.setting(PostDeployMigration.self, false)
        #expect(!options.isPostDeploy, "set to false")
        options[PostDeployMigration.self] = true
        #expect(options.isPostDeploy)
        options[PostDeployMigration.self] = nil
        #expect(!options.isPostDeploy, "cleared")
        #expect(options.isEmpty)

        let stored = MigrationOptions(Compression.self, true).named("archive")
        #expect(stored[Compression.self] == true && stored.name == "archive" && !stored.isPostDeploy && stored.fingerprint == nil)
        #expect(MigrationOptions.postDeploy.named("late").isPostDeploy)
    }
}
