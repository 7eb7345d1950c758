import Foundation

/// A folder of SQL migrations (``SQLMigrationFile``) that cannot be registered: a file misnamed,
/// unreadable, sharing its version with another, or with a directive the library does not read.
/// Nothing of the folder is registered.
public struct SQLMigrationFileError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// The file (or folder) concerned.
    public let file: String
    /// The manager the folder was registered on.
    public let manager: String
    /// That manager's store.
    public let store: String
    /// What is wrong with the file.
    public let problem: String
    /// What to do about it.
    public let fix: String

    public var description: String {
        "Migration file \(file) of manager \"\(manager)\" on \(store) \(problem). Nothing of its folder was registered. \(fix)."
    }

    public var errorDescription: String? { description }
}
