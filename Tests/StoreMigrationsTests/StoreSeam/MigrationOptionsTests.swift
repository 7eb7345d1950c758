import Testing
@testable import StoreMigrations

/// The options a plan asks of every migration (name, fingerprint, post-deploy) are kept apart from
/// the options by kind, so that a plan reads them without a lookup: they must follow every way of
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
        #expect(MigrationOptions.named("n").fingerprint == nil && !MigrationOptions.named("n").isEmpty)
        var fingerprinted = MigrationOptions()
        fingerprinted.fingerprint = "CREATE TABLE t(id)"
        fingerprinted.name = "t"
        #expect(fingerprinted.fingerprint == "CREATE TABLE t(id)" && fingerprinted.name == "t", "setting the name keeps the fingerprint")
        fingerprinted.name = nil
        #expect(fingerprinted.fingerprint == "CREATE TABLE t(id)" && !fingerprinted.isEmpty)
        fingerprinted.fingerprint = nil
        #expect(fingerprinted.isEmpty)

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
