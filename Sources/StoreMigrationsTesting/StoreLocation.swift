import Foundation

/// Where one coordinator's stores live during an upgrade test: a folder of its own, and a token
/// that makes names outside the file system (`UserDefaults` suites, PostgreSQL schemas) unique.
///
/// The app's coordinator factory puts every store under it, so that a restored fixture, an
/// upgraded copy and a fresh install never share a file or a suite:
///
/// ```swift
/// let tester = UpgradeTester { location in
///     let coordinator = MigrationCoordinator(appVersion: "2.0")
///     let prefsStore = PreferencesStore(url: location.url("Preferences.json"))
///     let prefs = try coordinator.manager("preferences", store: prefsStore)
///     let groupStore = UserDefaultsStore(suiteName: location.suiteName("group.notes"))
///     let group = try coordinator.manager("group", store: groupStore)
///     // register the app's migrations…
///     return coordinator
/// }
/// ```
public struct StoreLocation: Sendable, Hashable, CustomStringConvertible {
    /// The folder the stores' files go in; created before the factory is called.
    public let directory: URL
    /// Unique among the locations of a test run: letters, digits and underscores.
    public let token: String

    /// A location in `directory` with the name token `token`.
    public init(directory: URL, token: String) {
        self.directory = directory
        self.token = token
    }

    /// The file or folder `path` under ``directory``.
    public func url(_ path: String) -> URL {
        directory.appendingPathComponent(path)
    }

    /// `name` made unique to this location, for a `UserDefaults` suite or a database schema.
    public func suiteName(_ name: String) -> String {
        "\(name)_\(token)"
    }

    public var description: String { directory.path }

    /// A new, empty location under `parent`.
    static func temporary(in parent: URL) throws -> StoreLocation {
        let token = "t" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        let directory = parent.appendingPathComponent(token, isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return StoreLocation(directory: directory, token: token)
    }
}
