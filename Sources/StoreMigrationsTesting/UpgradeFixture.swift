import Foundation
import StoreMigrations

/// An app's stores as they stood after one of its versions, kept in a folder the app commits
/// beside its tests.
///
/// The folder holds `fixture.json` (the version and, for each store, its managers and kind) and
/// a folder per store named after its first manager, with the store's own files: a preferences
/// file, a SQLite database, a cache directory, a `UserDefaults` domain as a property list, a
/// PostgreSQL schema's dump.
///
/// ```text
/// Fixtures/notes-1.0/
///   fixture.json
///   preferences/Preferences.json
///   library/Notes.sqlite
///   thumbnails/Thumbnails/…
/// ```
///
/// Make one with ``UpgradeTester/capture(_:appVersion:into:)`` or
/// ``UpgradeTester/seed(at:into:_:)``; open a committed one with ``init(folder:)``.
public struct UpgradeFixture: Sendable, Hashable, CustomStringConvertible {
    /// The folder the fixture is kept in.
    public let folder: URL
    /// The app version the stores were captured after.
    public let appVersion: Version
    /// The stores captured, in the coordinator's registration order.
    public let stores: [Store]

    /// One store of a fixture.
    public struct Store: Sendable, Hashable, Codable {
        /// Its managers, in registration order; the first names its folder.
        public let managers: [String]
        /// The ``StoreFixtureKind/name`` of the kind that captured it.
        public let kind: String

        /// The store of `managers`, captured by the kind named `kind`.
        public init(managers: [String], kind: String) {
            self.managers = managers
            self.kind = kind
        }

        /// Its managers' names, comma-separated.
        var label: String { managers.joined(separator: ", ") }
    }

    private struct Manifest: Codable {
        var format: Int
        var appVersion: Version
        var stores: [Store]
    }

    static let manifestName = "fixture.json"
    private static let format = 1

    /// Opens the fixture kept in `folder`.
    ///
    /// - Throws: ``UpgradeTestingError`` when the folder has no readable `fixture.json`.
    public init(folder: URL) throws {
        let manifestURL = folder.appendingPathComponent(Self.manifestName)
        let manifest: Manifest
        do {
            manifest = try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: manifestURL))
        } catch {
            throw UpgradeTestingError(store: "", reason: .notAFixture(folder: folder.path, detail: "\(error)"))
        }
        guard manifest.format == Self.format else {
            throw UpgradeTestingError(
                store: "", reason: .notAFixture(folder: folder.path, detail: "format \(manifest.format), this kit reads \(Self.format)"))
        }
        self.init(folder: folder, appVersion: manifest.appVersion, stores: manifest.stores)
    }

    init(folder: URL, appVersion: Version, stores: [Store]) {
        self.folder = folder
        self.appVersion = appVersion
        self.stores = stores
    }

    /// Writes `fixture.json`.
    func writeManifest() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let manifest = Manifest(format: Self.format, appVersion: appVersion, stores: stores)
        try encoder.encode(manifest).write(to: folder.appendingPathComponent(Self.manifestName), options: .atomic)
    }

    /// The folder holding `store`'s files.
    func folder(of store: Store) -> URL {
        folder.appendingPathComponent(store.managers[0], isDirectory: true)
    }

    public var description: String {
        "fixture of app version \(appVersion) in \(folder.path): " + stores.map { "\($0.label) (\($0.kind))" }.joined(separator: ", ")
    }
}
