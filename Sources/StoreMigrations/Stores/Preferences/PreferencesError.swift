import Foundation

/// The errors editing ``Preferences`` throws. A migration body that lets one escape fails its
/// step; the store then writes nothing.
///
/// ```swift
/// do {
///     try prefs.renameKey("showHelp", to: "onboarding.showHelp")
/// } catch PreferencesError.destinationExists {
///     prefs.removeValue(for: "showHelp")          // the new key wins
/// }
/// ```
public enum PreferencesError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// Text given as a key path is not one.
    case invalidKeyPath(text: String, reason: String)
    /// A value cannot be set at `path` because `blockingPath`, one of its parents, holds a value
    /// that is not a dictionary (described by `found`, e.g. "a string").
    case notADictionary(path: PreferenceKeyPath, blockingPath: PreferenceKeyPath, found: String)
    /// A rename's destination already holds a value.
    case destinationExists(source: PreferenceKeyPath, destination: PreferenceKeyPath)

    /// The message: what failed, where, and what to do.
    public var description: String {
        switch self {
        case let .invalidKeyPath(text, reason):
            return "\"\(text)\" is not a preference key path: \(reason). Separate keys with dots, "
                + "write a dot inside a key as \\. and a backslash as \\\\, or pass the keys as an "
                + "array such as [\"com.example.flag\"]."
        case let .notADictionary(path, blockingPath, found):
            return "Cannot set \"\(path)\": \"\(blockingPath)\" holds \(found), not a dictionary. "
                + "Remove or rename \"\(blockingPath)\" first if it should become a dictionary."
        case let .destinationExists(source, destination):
            return "Cannot rename \"\(source)\" to \"\(destination)\": \"\(destination)\" already "
                + "holds a value. Remove it first (removeValue(for: \"\(destination)\")) to replace "
                + "it, or merge the two values in the migration."
        }
    }

    /// The same message as ``description``.
    public var errorDescription: String? { description }
}
